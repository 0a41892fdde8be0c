# bpf_snprintf: int, long long, unsigned and hex conversions (an int takes the low 32 bits)
# entry: mem 96
# r0: 68
# out: -1|7|4294967295|abcdef|ABCDEF|-5|18446744073709551615|10000000000|5
.map .rodata array 4 64 1 0x80 init=25647c25697c25757c25787c25587c256c6c647c256c6c757c256c787c2564000000000000000000000000000000000000000000000000000000000000000000
r6 = r1
r1 = 0xffffffffffffffff ll
*(u64 *)(r10 -72) = r1
r1 = 0x7 ll
*(u64 *)(r10 -64) = r1
r1 = 0xffffffffffffffff ll
*(u64 *)(r10 -56) = r1
r1 = 0xabcdef ll
*(u64 *)(r10 -48) = r1
r1 = 0xabcdef ll
*(u64 *)(r10 -40) = r1
r1 = 0xfffffffffffffffb ll
*(u64 *)(r10 -32) = r1
r1 = 0xffffffffffffffff ll
*(u64 *)(r10 -24) = r1
r1 = 0x10000000000 ll
*(u64 *)(r10 -16) = r1
r1 = 0x100000005 ll
*(u64 *)(r10 -8) = r1
r1 = r6
r2 = 96
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -72
r5 = 72
call 165
exit
