# bpf_snprintf: output longer than str_size is cut to str_size - 1 bytes and a NUL; r0 is the whole length plus 1
# The text is formatted into a zeroed stack buffer and copied into the memory (r1) word
# by word, so that Linux can run it too (a syscall program's context is not helper memory).
# entry: mem 64
# r0: 30
# out: value=123
.map .rodata array 4 64 1 0x80 init=76616c75653d256c6c7520616e64206d6f7265207465787400000000000000000000000000000000000000000000000000000000000000000000000000000000
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
r1 = 0x75bcd15 ll
*(u64 *)(r10 - 8) = r1
r1 = r10
r1 += -256
r2 = 10
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -8
r5 = 8
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
r0 = r7
exit
