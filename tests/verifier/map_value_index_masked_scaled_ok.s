# mem-bounds, accepted: an unknown index masked with `& 7`, scaled by 8, into a 64-byte value.
.map vals array 4 64 4
r1 = 1
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r6 = r0
call 5
r0 &= 7
r0 <<= 3
r6 += r0
r1 = *(u64 *)(r6 + 0)
out:
r0 = 0
exit
