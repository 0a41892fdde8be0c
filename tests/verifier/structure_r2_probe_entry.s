# uninit-register: a probe's entry passes only r1 (the context); r2 is not set.
r0 = r2                   ; error: uninit-register r2
exit
