# uninit-register: r3 is never written.
r0 = r3                   ; error: uninit-register r3
exit
