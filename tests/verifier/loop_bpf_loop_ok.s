# bpf_loop, accepted: the callback adds each index to a u64 the caller passes as ctx;
# nr_loops comes from memory (unknown), so at most 2^23 (BPF_MAX_LOOPS) calls. The cost
# bound is the 6 instructions before the call, 2^23 x 6 (the call and the callback's 5),
# 1 for the head's last run and the 2 after it: 6 + 50331648 + 1 + 2.
# entry: mem 8
# cost: 50331657
r1 = *(u32 *)(r1 + 0)
r2 = func(cb) ll
r3 = r10
r3 += -8
r4 = 0
*(u64 *)(r10 - 8) = r4
call 181
r0 = *(u64 *)(r10 - 8)
exit
cb:
r3 = *(u64 *)(r2 + 0)
r3 += r1
*(u64 *)(r2 + 0) = r3
r0 = 0
exit
