# rodata-write: an immediate store into .rodata at an offset.
.map .rodata array 4 16 1 0x80
r1 = map_idx_value(0, 8) ll
*(u32 *)(r1 + 4) = 1     ; error: rodata-write
r0 = 0
exit
