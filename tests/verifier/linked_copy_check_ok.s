# mem-bounds, accepted: clang checks a copy (`r3 = r2; if r3 > 56`) and indexes with the
# original; the check narrows both.
# entry: mem 64
r2 = *(u64 *)(r1 + 0)
r3 = r2
if r3 > 56 goto out
r1 += r2
r0 = *(u64 *)(r1 + 0)
exit
out:
r0 = 0
exit
