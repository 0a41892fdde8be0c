# null-deref, accepted: the lookup result is copied to r6 before r0 is checked; the check
# on r0 makes the copy non-NULL too.
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
r6 = r0
if r0 == 0 goto out
r1 = *(u64 *)(r6 + 0)
out:
r0 = 0
exit
