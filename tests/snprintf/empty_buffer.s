# bpf_snprintf: str_size 0 writes nothing and still returns the length plus 1
# entry: mem 64
# r0: 10
# out: 
.map .rodata array 4 64 1 0x80 init=2564206170706c657300000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
r6 = r1
r1 = 0xc ll
*(u64 *)(r10 -8) = r1
r1 = r6
r2 = 0
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -8
r5 = 8
call 165
exit
