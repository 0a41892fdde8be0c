# bpf_loop, rejected: called through callx (bpf_conformance's helper-id call), its
# callback cannot be pinned to one function.
r1 = 4
r2 = func(cb) ll
r3 = 0
r4 = 0
r5 = 181
callx r5                 ; error: helper-arg must be called directly
r0 = 0
exit
cb:
r0 = 0
exit
