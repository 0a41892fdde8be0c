# mem-bounds: an atomic add one u64 past a 16-byte value.
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r1 = 1
lock *(u64 *)(r0 + 16) += r1   ; error: mem-bounds
out:
r0 = 0
exit
