# rodata-write, accepted neighbour: reading .rodata.
.map .rodata array 4 8 1 0x80
r1 = map_idx_value(0, 0) ll
r0 = *(u64 *)(r1 + 0)
exit
