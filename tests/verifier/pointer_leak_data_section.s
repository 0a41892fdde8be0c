# pointer-leak: storing a pointer into .bss.
.map .bss array 4 8 1
r1 = map_idx_value(0, 0) ll
*(u64 *)(r1 + 0) = r1    ; error: pointer-leak
r0 = 0
exit
