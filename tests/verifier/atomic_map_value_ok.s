# atomic-region, accepted: atomic add and fetch-or on a map value (the counter idiom).
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r1 = 1
lock *(u64 *)(r0 + 8) += r1
w1 = 4
w1 = atomic_fetch_or((u32 *)(r0 + 0), w1)
out:
r0 = 0
exit
