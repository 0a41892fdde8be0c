# null-deref: two lookups; only the first result is checked.
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
r6 = r0
r1 = 1
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r6 == 0 goto out
r1 = *(u64 *)(r0 + 0)    ; error: null-deref
out:
r0 = 0
exit
