# recursion: f and g call each other.
r1 = 6
call f
r0 = 0
exit
f:
if r1 == 0 goto fdone
r1 += -1
call g
fdone:
r0 = 0
exit
g:
call f                   ; error: recursion
r0 = 0
exit
