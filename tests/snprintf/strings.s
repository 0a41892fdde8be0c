# bpf_snprintf: %s of a .rodata string and of a stack buffer, with widths; %c; %%
# The text is formatted into a zeroed stack buffer and copied into the memory (r1) word
# by word, so that Linux can run it too (a syscall program's context is not helper memory).
# entry: mem 64
# r0: 28
# out: gpu| stack|ok    |A  z|100%
.map .rodata array 4 80 1 0x80 init=25737c2536737c252d36737c25632533637c3130302525000000000000000000000000000000000000000000000000000000000000000000000000000000000067707500000000006f6b000000000000
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
r1 = map_idx_value(0, 64) ll
*(u64 *)(r10 - 40) = r1
r1 = 0x6b63617473 ll
*(u64 *)(r10 - 288) = r1
r1 = 0x0 ll
*(u64 *)(r10 - 280) = r1
r1 = r10
r1 += -288
*(u64 *)(r10 - 32) = r1
r1 = map_idx_value(0, 72) ll
*(u64 *)(r10 - 24) = r1
r1 = 0x41 ll
*(u64 *)(r10 - 16) = r1
r1 = 0x7a ll
*(u64 *)(r10 - 8) = r1
r1 = r10
r1 += -256
r2 = 64
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -40
r5 = 40
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
