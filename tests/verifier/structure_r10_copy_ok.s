# r10-write, accepted neighbour: copy r10 and move the copy.
r1 = r10
r1 += -8
r0 = 0
*(u64 *)(r1 + 0) = r0
exit
