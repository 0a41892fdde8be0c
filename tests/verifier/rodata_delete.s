# rodata-write: map_delete_elem on a read-only map.
.map ro hash 4 8 4 0x80
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 3                   ; error: rodata-write
r0 = 0
exit
