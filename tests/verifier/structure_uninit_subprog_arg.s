# uninit-register: a subprogram reads r6, which is never an argument.
call f
r0 = 0
exit
f:
r0 = r6                   ; error: uninit-register r6
exit
