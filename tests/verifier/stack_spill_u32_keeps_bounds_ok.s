# stack-pointer, accepted: an index spilled by a 4-byte store (clang does this for a
# counter whose address is taken) and filled back by a 4-byte load keeps its bounds.
.map m array 4 64 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r6 = r0
call 5
r0 &= 7
*(u32 *)(r10 - 16) = r0
r1 = *(u32 *)(r10 - 16)
r1 <<= 3
r6 += r1
r0 = *(u64 *)(r6 + 0)
out:
r0 = 0
exit
