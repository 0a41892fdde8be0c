# mem-bounds, accepted: a 64-bit value checked only in its low half (`if w0 > 7`) and
# spilled by a 4-byte store: the fill is exactly the low half, so it is at most 7.
# entry: mem 64
r6 = r1
call 5
if w0 > 7 goto out
*(u32 *)(r10 - 8) = r0
r1 = *(u32 *)(r10 - 8)
r1 <<= 3
r6 += r1
r0 = *(u64 *)(r6 + 0)
exit
out:
r0 = 0
exit
