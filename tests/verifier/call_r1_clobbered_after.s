# uninit-register: after a subprogram returns, the caller's r1-r5 are gone.
r1 = 5
call f
r0 = r1                  ; error: uninit-register
exit
f:
r0 = 0
exit
