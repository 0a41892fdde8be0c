# pointer-leak: a subprogram returns a pointer into its own frame.
call f
r0 = 0
exit
f:
r0 = r10
r0 += -8
exit                     ; error: pointer-leak its own stack
