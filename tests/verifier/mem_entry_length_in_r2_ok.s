# mem-bounds, accepted: the index is checked against the length r2 holds (the
# conformance entry passes it); r2 is a known constant (32), so the check bounds it.
# entry: mem 32
r3 = *(u8 *)(r1 + 0)
r4 = r3
r4 += 1
if r4 > r2 goto out
r1 += r3
r0 = *(u8 *)(r1 + 0)
exit
out:
r0 = 0
exit
