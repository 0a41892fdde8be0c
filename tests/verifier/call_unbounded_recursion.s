# recursion: a function that calls itself with no base case.
call f
exit
f:
call f                   ; error: recursion
exit
