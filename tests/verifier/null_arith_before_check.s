# null-deref: arithmetic on the result before the NULL check.
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
r0 += 8                  ; error: null-deref before it is checked against NULL
if r0 == 0 goto out
r1 = *(u64 *)(r0 + 0)
out:
r0 = 0
exit
