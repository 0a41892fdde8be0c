# null-deref, accepted: the check is on the copy, the access through the original.
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
r6 = r0
if r6 == 0 goto out
r1 = *(u64 *)(r0 + 8)
out:
r0 = 0
exit
