# mem-bounds: a 2-byte store at offset 15 of a 16-byte value ends one byte past it.
.map vals array 4 16 4
r1 = 1
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
*(u16 *)(r0 + 15) = 1    ; error: mem-bounds at offset 15
out:
r0 = 0
exit
