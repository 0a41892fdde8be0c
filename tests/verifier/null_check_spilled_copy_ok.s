# null-deref, accepted: the result is spilled, the spilled copy filled and checked, and the
# original register used: all three are one lookup.
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
*(u64 *)(r10 - 16) = r0
r1 = *(u64 *)(r10 - 16)
if r1 == 0 goto out
r1 = *(u64 *)(r0 + 0)
out:
r0 = 0
exit
