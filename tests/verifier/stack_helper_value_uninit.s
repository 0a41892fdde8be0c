# stack-uninit: map_update_elem reads the 16-byte value, whose second half is unwritten.
.map h hash 4 16 16
r1 = 0
*(u32 *)(r10 - 4) = r1
*(u64 *)(r10 - 24) = r1
r2 = r10
r2 += -4
r3 = r10
r3 += -24
r4 = 0
r1 = map_idx(0) ll
call 2                   ; error: stack-uninit
r0 = 0
exit
