# bpf_loop, rejected: flags must be 0 (Linux returns -EINVAL).
r1 = 4
r2 = func(cb) ll
r3 = 0
r4 = 1
call 181                 ; error: helper-arg the constant 0 (flags)
r0 = 0
exit
cb:
r0 = 0
exit
