# mem-bounds: the same check on a full 64-bit i: i = 2^64 - 8 makes i + 8 wrap to 0, which
# passes `i + 8 <= 64`, so i may still be huge.
# entry: mem 64
r2 = *(u64 *)(r1 + 0)
r3 = r2
r3 += 8
if r3 > 64 goto out
r1 += r2
r0 = *(u64 *)(r1 + 0)    ; error: mem-bounds
exit
out:
r0 = 0
exit
