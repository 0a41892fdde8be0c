# An 8-byte read at offset 1 of an 8-byte value runs one byte past its end.
.map counters array 4 8 16
r1 = 3
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r1 = *(u64 *)(r0 + 1)    ; error: mem-bounds outside a value of `counters`
out:
r0 = 0
exit
