# bpf_snprintf: a format without conversions and an empty data array
# entry: mem 64
# r0: 11
# out: plain text
.map .rodata array 4 64 1 0x80 init=706c61696e2074657874000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
r6 = r1
r1 = 0
*(u64 *)(r10 - 8) = r1
r1 = r6
r2 = 64
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -8
r5 = 0
call 165
exit
