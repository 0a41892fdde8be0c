# null-deref, accepted: a lookup, a null check, then a read and a write inside the value.
.map counters array 4 8 16
r1 = 3
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r1 = *(u64 *)(r0 + 0)
r1 += 1
*(u64 *)(r0 + 0) = r1
out:
r0 = 0
exit
