# mem-bounds, accepted: bpf2ptx_log2 (603) of any number is 0..=63 (specs/verifier.md,
# "Paths"), so a byte at that offset of 64 bytes is in bounds.
# entry: mem 64
r6 = r1
r1 = *(u64 *)(r6 + 0)
call 603
r6 += r0
r0 = *(u8 *)(r6 + 0)
exit
