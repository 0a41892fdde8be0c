# bpf_snprintf: output longer than str_size is cut to str_size - 1 bytes and a NUL; r0 is the whole length plus 1
# entry: mem 64
# r0: 30
# out: value=123
.map .rodata array 4 64 1 0x80 init=76616c75653d256c6c7520616e64206d6f7265207465787400000000000000000000000000000000000000000000000000000000000000000000000000000000
r6 = r1
r1 = 0x75bcd15 ll
*(u64 *)(r10 -8) = r1
r1 = r6
r2 = 10
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -8
r5 = 8
call 165
exit
