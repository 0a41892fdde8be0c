# unsupported: taking a function's address (for bpf_loop-style callbacks).
r1 = func(cb) ll         ; error: unsupported
r0 = 0
exit
cb:
r0 = 0
exit
