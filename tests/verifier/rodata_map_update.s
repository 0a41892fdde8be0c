# rodata-write (soundness regression): map_update_elem on a read-only map.
.map .rodata array 4 8 1 0x80
r1 = 0
*(u32 *)(r10 - 4) = r1
*(u64 *)(r10 - 16) = r1
r2 = r10
r2 += -4
r3 = r10
r3 += -16
r4 = 0
r1 = map_idx(0) ll
call 2                   ; error: rodata-write
r0 = 0
exit
