# pointer-leak, accepted: a pointer spilled on the stack stays there.
r1 = r10
r1 += -16
*(u64 *)(r10 - 8) = r1
r2 = *(u64 *)(r10 - 8)
r0 = 0
*(u64 *)(r2 + 0) = r0
exit
