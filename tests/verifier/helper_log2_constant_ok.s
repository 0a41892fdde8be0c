# mem-bounds, accepted: bpf2ptx_log2 of a constant is that constant's log2 (8 -> 3), so
# the u64 at 3 + 5 = 8 of 16 bytes is in bounds (with 0..=63 it could be at 68).
# entry: mem 16
r6 = r1
r1 = 8
call 603
r6 += r0
r0 = *(u64 *)(r6 + 5)
exit
