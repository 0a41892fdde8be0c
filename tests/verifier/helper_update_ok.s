# helper-arg, accepted: map_update_elem with an initialised key and value on the stack.
.map h hash 4 8 16
r1 = 7
*(u32 *)(r10 - 4) = r1
*(u64 *)(r10 - 16) = r1
r2 = r10
r2 += -4
r3 = r10
r3 += -16
r4 = 0
r1 = map_idx(0) ll
call 2
r0 = 0
exit
