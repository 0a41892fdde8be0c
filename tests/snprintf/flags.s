# bpf_snprintf: widths and the flags 0 + - space on signed and unsigned conversions
# entry: mem 96
# r0: 49
# out: [   42][42   ][-0042][+7][ 7][7][0000beef][a   ]
.map .rodata array 4 64 1 0x80 init=5b2535645d5b252d35645d5b253035645d5b252b645d5b2520645d5b252b755d5b2530386c785d5b252d34785d00000000000000000000000000000000000000
r6 = r1
r1 = 0x2a ll
*(u64 *)(r10 -64) = r1
r1 = 0x2a ll
*(u64 *)(r10 -56) = r1
r1 = 0xffffffffffffffd6 ll
*(u64 *)(r10 -48) = r1
r1 = 0x7 ll
*(u64 *)(r10 -40) = r1
r1 = 0x7 ll
*(u64 *)(r10 -32) = r1
r1 = 0x7 ll
*(u64 *)(r10 -24) = r1
r1 = 0xbeef ll
*(u64 *)(r10 -16) = r1
r1 = 0xa ll
*(u64 *)(r10 -8) = r1
r1 = r6
r2 = 96
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -64
r5 = 64
call 165
exit
