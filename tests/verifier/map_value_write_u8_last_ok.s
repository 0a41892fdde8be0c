# mem-bounds, accepted: a 1-byte store at offset 15, the last one that fits a 16-byte value.
.map vals array 4 16 4
r1 = 1
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
*(u8 *)(r0 + 15) = 1
out:
r0 = 0
exit
