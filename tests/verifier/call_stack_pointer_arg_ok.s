# bpf-to-bpf calls, accepted: the caller passes a pointer to its stack; the callee fills it
# and the caller reads it back.
r1 = r10
r1 += -8
call fill
r0 = *(u64 *)(r10 - 8)
exit
fill:
r2 = 42
*(u64 *)(r1 + 0) = r2
r0 = 0
exit
