# bpf_loop, rejected: a callback returns 0 (continue) or 1 (stop), nothing else.
r1 = 4
r2 = func(cb) ll
r3 = 0
r4 = 0
call 181
r0 = 0
exit
cb:
r0 = 2
exit                     ; error: helper-arg must return 0 (continue) or 1 (stop)
