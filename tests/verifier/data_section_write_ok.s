# rodata-write, accepted neighbour: .data and .bss are writable (store, atomic, helper).
.map .data array 4 8 1
.map .bss array 4 24 1
r1 = map_idx_value(0, 0) ll
*(u64 *)(r1 + 0) = 3
r2 = 1
lock *(u64 *)(r1 + 0) += r2
r1 = map_idx_value(1, 0) ll
r2 = map_idx_value(1, 8) ll
r3 = map_idx_value(1, 16) ll
call 505
r0 = 0
exit
