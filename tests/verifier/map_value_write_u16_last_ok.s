# mem-bounds, accepted: a 2-byte store at offset 14, the last one that fits a 16-byte value.
.map vals array 4 16 4
r1 = 1
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
*(u16 *)(r0 + 14) = 1
out:
r0 = 0
exit
