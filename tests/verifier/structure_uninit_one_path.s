# uninit-register: r2 is written on only one of the two paths that reach its use.
r0 = 0
if r1 == 0 goto skip
r2 = 1
skip:
r0 = r2                   ; error: uninit-register r2
exit
