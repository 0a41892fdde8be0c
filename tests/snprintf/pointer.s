# bpf_snprintf: %px prints 16 zero-padded hex digits, or the given width
# entry: mem 64
# r0: 22
# out: 0000000000001234  abc
.map .rodata array 4 64 1 0x80 init=25707820253470780000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
r6 = r1
r1 = 0x1234 ll
*(u64 *)(r10 -16) = r1
r1 = 0xabc ll
*(u64 *)(r10 -8) = r1
r1 = r6
r2 = 64
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -16
r5 = 16
call 165
exit
