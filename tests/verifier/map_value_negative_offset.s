# mem-bounds: a read one byte before the start of a map value.
.map vals array 4 16 4
r1 = 1
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r1 = *(u8 *)(r0 - 1)    ; error: mem-bounds offset -1
out:
r0 = 0
exit
