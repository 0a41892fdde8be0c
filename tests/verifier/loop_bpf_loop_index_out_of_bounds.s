# bpf_loop, rejected: as loop_bpf_loop_index_in_bounds_ok.s, but nr_loops may be 9, so
# the last index writes one byte past the caller's stack.
# entry: mem 8
r1 = *(u32 *)(r1 + 0)
r1 &= 7
r1 += 2
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
*(u8 *)(r2 + 0) = r3     ; error: mem-bounds
r0 = 0
exit
