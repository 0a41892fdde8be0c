# mem-bounds: str_size (32) is larger than the stack buffer from r1 to the frame's top (16 bytes).
.map .rodata array 4 8 1 0x80 init=2564000000000000
r1 = 7
*(u64 *)(r10 - 16) = r1
r1 = map_idx_value(0, 8) ll
*(u64 *)(r10 - 8) = r1
r1 = r10
r1 += -16
r2 = 32
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -16
r5 = 16
call 165                 ; error: mem-bounds
r0 = 0
exit
