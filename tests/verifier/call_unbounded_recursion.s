# call-depth: recursion with no base case.
call f
exit
f:
call f                   ; error: call-depth
exit
