# helper-arg: bpf_snprintf takes at most 12 arguments (96 bytes of data), Linux's MAX_BPRINTF_VARARGS.
.map .rodata array 4 8 1 0x80 init=2564000000000000
r1 = 0
*(u64 *)(r10 - 8) = r1
*(u64 *)(r10 - 16) = r1
*(u64 *)(r10 - 24) = r1
*(u64 *)(r10 - 32) = r1
*(u64 *)(r10 - 40) = r1
*(u64 *)(r10 - 48) = r1
*(u64 *)(r10 - 56) = r1
*(u64 *)(r10 - 64) = r1
*(u64 *)(r10 - 72) = r1
*(u64 *)(r10 - 80) = r1
*(u64 *)(r10 - 88) = r1
*(u64 *)(r10 - 96) = r1
*(u64 *)(r10 - 104) = r1
*(u64 *)(r10 - 112) = r1
r1 = r10
r1 += -64
r2 = 32
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -112
r5 = 104
call 165                 ; error: helper-arg at most 96
r0 = 0
exit
