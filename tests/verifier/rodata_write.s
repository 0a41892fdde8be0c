# A store into .rodata.
.map .rodata array 4 8 1 0x80
r1 = map_idx_value(0, 0) ll
r2 = 7
*(u64 *)(r1 + 0) = r2    ; error: rodata-write
r0 = 0
exit
