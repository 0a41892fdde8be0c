# bpf_loop, accepted: the callback writes byte `index` of an 8-byte stack buffer of the
# caller (ctx); nr_loops is at most 8, so every index is in bounds.
# entry: mem 8
r1 = *(u32 *)(r1 + 0)
r1 &= 7
r1 += 1
r2 = func(cb) ll
r3 = r10
r3 += -8
r4 = 0
*(u64 *)(r10 - 8) = r4
call 181
r0 = 0
exit
cb:
r2 += r1
r3 = 1
*(u8 *)(r2 + 0) = r3
r0 = 0
exit
