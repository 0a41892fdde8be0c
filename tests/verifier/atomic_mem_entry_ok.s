# atomic-region, accepted: bpf_conformance's input memory allows atomics (its tests use them).
# entry: mem 8
r2 = 1
lock *(u64 *)(r1 + 0) += r2
r0 = 0
exit
