# mem-bounds: a 8-byte read at offset 9 of a 16-byte value ends one byte past it.
.map vals array 4 16 4
r1 = 1
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r1 = *(u64 *)(r0 + 9)    ; error: mem-bounds outside a value of `vals` (16 bytes)
out:
r0 = 0
exit
