# helper-arg: bpf_snprintf's str_size has no upper bound, so no buffer is proven large enough.
.map .rodata array 4 8 1 0x80 init=2564000000000000
r1 = 7
*(u64 *)(r10 - 16) = r1
r1 = map_idx_value(0, 8) ll
*(u64 *)(r10 - 8) = r1
call 511
r6 = r0
r1 = r10
r1 += -64
r2 = r6
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -16
r5 = 16
call 165                 ; error: helper-arg no upper bound
r0 = 0
exit
