# rodata-write: an atomic add into .rodata.
.map .rodata array 4 8 1 0x80
r1 = map_idx_value(0, 0) ll
r2 = 1
lock *(u64 *)(r1 + 0) += r2   ; error: rodata-write atomic update into read-only
r0 = 0
exit
