# null-deref, accepted: spilled before the check, filled after it: the spill was refined too.
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
*(u64 *)(r10 - 16) = r0
if r0 == 0 goto out
r2 = *(u64 *)(r10 - 16)
r1 = *(u64 *)(r2 + 8)
out:
r0 = 0
exit
