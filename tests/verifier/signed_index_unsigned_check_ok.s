# mem-bounds, accepted: an unsigned check (`if r2 > 56`) also excludes negative values.
# entry: mem 64
r2 = *(u64 *)(r1 + 0)
if r2 > 56 goto out
r1 += r2
r0 = *(u64 *)(r1 + 0)
exit
out:
r0 = 0
exit
