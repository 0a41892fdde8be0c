# null-deref: the access is on the branch where r0 == 0.
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 != 0 goto out
r1 = *(u64 *)(r0 + 0)    ; error: mem-scalar
out:
r0 = 0
exit
