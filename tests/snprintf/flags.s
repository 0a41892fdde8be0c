# bpf_snprintf: widths and the flags 0 + - space on signed and unsigned conversions
# The text is formatted into a zeroed stack buffer and copied into the memory (r1) word
# by word, so that Linux can run it too (a syscall program's context is not helper memory).
# entry: mem 96
# r0: 49
# out: [   42][42   ][-0042][+7][ 7][7][0000beef][a   ]
.map .rodata array 4 64 1 0x80 init=5b2535645d5b252d35645d5b253035645d5b252b645d5b2520645d5b252b755d5b2530386c785d5b252d34785d00000000000000000000000000000000000000
r6 = r1
r1 = 0
*(u64 *)(r10 - 256) = r1
*(u64 *)(r10 - 248) = r1
*(u64 *)(r10 - 240) = r1
*(u64 *)(r10 - 232) = r1
*(u64 *)(r10 - 224) = r1
*(u64 *)(r10 - 216) = r1
*(u64 *)(r10 - 208) = r1
*(u64 *)(r10 - 200) = r1
*(u64 *)(r10 - 192) = r1
*(u64 *)(r10 - 184) = r1
*(u64 *)(r10 - 176) = r1
*(u64 *)(r10 - 168) = r1
r1 = 0x2a ll
*(u64 *)(r10 - 64) = r1
r1 = 0x2a ll
*(u64 *)(r10 - 56) = r1
r1 = 0xffffffffffffffd6 ll
*(u64 *)(r10 - 48) = r1
r1 = 0x7 ll
*(u64 *)(r10 - 40) = r1
r1 = 0x7 ll
*(u64 *)(r10 - 32) = r1
r1 = 0x7 ll
*(u64 *)(r10 - 24) = r1
r1 = 0xbeef ll
*(u64 *)(r10 - 16) = r1
r1 = 0xa ll
*(u64 *)(r10 - 8) = r1
r1 = r10
r1 += -256
r2 = 96
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -64
r5 = 64
call 165
r7 = r0
r1 = *(u64 *)(r10 - 256)
*(u64 *)(r6 + 0) = r1
r1 = *(u64 *)(r10 - 248)
*(u64 *)(r6 + 8) = r1
r1 = *(u64 *)(r10 - 240)
*(u64 *)(r6 + 16) = r1
r1 = *(u64 *)(r10 - 232)
*(u64 *)(r6 + 24) = r1
r1 = *(u64 *)(r10 - 224)
*(u64 *)(r6 + 32) = r1
r1 = *(u64 *)(r10 - 216)
*(u64 *)(r6 + 40) = r1
r1 = *(u64 *)(r10 - 208)
*(u64 *)(r6 + 48) = r1
r1 = *(u64 *)(r10 - 200)
*(u64 *)(r6 + 56) = r1
r1 = *(u64 *)(r10 - 192)
*(u64 *)(r6 + 64) = r1
r1 = *(u64 *)(r10 - 184)
*(u64 *)(r6 + 72) = r1
r1 = *(u64 *)(r10 - 176)
*(u64 *)(r6 + 80) = r1
r1 = *(u64 *)(r10 - 168)
*(u64 *)(r6 + 88) = r1
r0 = r7
exit
