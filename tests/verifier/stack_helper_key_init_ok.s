# stack-uninit, accepted neighbour: the whole 8-byte key written first.
.map h hash 8 8 16
r1 = 0
*(u64 *)(r10 - 8) = r1
r2 = r10
r2 += -8
r1 = map_idx(0) ll
call 1
r0 = 0
exit
