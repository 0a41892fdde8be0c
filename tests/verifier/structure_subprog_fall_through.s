# fall-through: a subprogram whose body runs into the next function is rejected
# at its own last instruction (functions are separate units).
r1 = 1
call f
call g
r0 = 0
exit
f:
r0 = r1                   ; error: fall-through
g:
r0 = 0
exit
