# mem-scalar, accepted neighbour: a load through a stack pointer.
r1 = 9
*(u64 *)(r10 - 8) = r1
r1 = r10
r0 = *(u64 *)(r1 - 8)
exit
