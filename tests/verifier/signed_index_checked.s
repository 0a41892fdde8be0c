# mem-bounds, accepted: the same signed index checked on both sides.
# entry: mem 64
r2 = *(u64 *)(r1 + 0)
if r2 s> 56 goto out
if r2 s< 0 goto out
r1 += r2
r0 = *(u64 *)(r1 + 0)
exit
out:
r0 = 0
exit
