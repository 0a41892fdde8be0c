# stack, accepted neighbour: a slot that held a spilled pointer is reused for a u32 key
# (clang reuses slots); the key's own four bytes are readable.
.map m array 4 8 4
*(u64 *)(r10 - 8) = r10
r1 = 1
*(u32 *)(r10 - 8) = r1
r2 = r10
r2 += -8
r1 = map_idx(0) ll
call 1
r0 = 0
exit
