# stack-uninit: trace_vprintk reads its argument array: every word must be written first.
.map .rodata array 4 8 1 0x80 init=6869210a00000000
r1 = 1
*(u64 *)(r10 - 32) = r1
*(u64 *)(r10 - 24) = r1
*(u64 *)(r10 - 8) = r1
r1 = map_idx_value(0, 0) ll
r2 = 5
r3 = r10
r3 += -32
r4 = 32
call 177                 ; error: stack-uninit
r0 = 0
exit
