# mem-bounds, accepted: `if (i + 8 > len) return;` checks i + 8 in a copy, then reads 8
# bytes at i (i is a byte, so i + 8 cannot wrap).
# entry: mem 64
r2 = *(u8 *)(r1 + 0)
r3 = r2
r3 += 8
if r3 > 64 goto out
r1 += r2
r0 = *(u64 *)(r1 + 0)
exit
out:
r0 = 0
exit
