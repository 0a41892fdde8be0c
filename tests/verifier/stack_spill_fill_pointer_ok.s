# stack-pointer, accepted: a map value pointer spilled across a helper call and filled back
# keeps its type, so it can be written through.
.map m array 4 8 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
*(u64 *)(r10 - 16) = r0
call 5
r1 = *(u64 *)(r10 - 16)
*(u64 *)(r1 + 0) = r0
out:
r0 = 0
exit
