# pointer-arith: the operand of an atomic add into a map value is a pointer.
.map .bss array 4 8 1
r1 = map_idx_value(0, 0) ll
lock *(u64 *)(r1 + 0) += r10   ; error: pointer-arith
r0 = 0
exit
