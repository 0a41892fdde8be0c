# helper-arg: trace_vprintk takes at most 12 arguments (Linux's MAX_BPRINTF_VARARGS): 13 words are too many.
.map .rodata array 4 8 1 0x80 init=6869210a00000000
r1 = 1
*(u64 *)(r10 - 104) = r1
*(u64 *)(r10 - 96) = r1
*(u64 *)(r10 - 88) = r1
*(u64 *)(r10 - 80) = r1
*(u64 *)(r10 - 72) = r1
*(u64 *)(r10 - 64) = r1
*(u64 *)(r10 - 56) = r1
*(u64 *)(r10 - 48) = r1
*(u64 *)(r10 - 40) = r1
*(u64 *)(r10 - 32) = r1
*(u64 *)(r10 - 24) = r1
*(u64 *)(r10 - 16) = r1
*(u64 *)(r10 - 8) = r1
r1 = map_idx_value(0, 0) ll
r2 = 5
r3 = r10
r3 += -104
r4 = 104
call 177                 ; error: helper-arg at most 96
r0 = 0
exit
