# bpf_snprintf: %px prints 16 zero-padded hex digits, or the given width
# The text is formatted into a zeroed stack buffer and copied into the memory (r1) word
# by word, so that Linux can run it too (a syscall program's context is not helper memory).
# entry: mem 64
# r0: 22
# out: 0000000000001234  abc
.map .rodata array 4 64 1 0x80 init=25707820253470780000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
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
r1 = 0x1234 ll
*(u64 *)(r10 - 16) = r1
r1 = 0xabc ll
*(u64 *)(r10 - 8) = r1
r1 = r10
r1 += -256
r2 = 64
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -16
r5 = 16
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
