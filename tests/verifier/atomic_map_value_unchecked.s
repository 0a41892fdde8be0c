# null-deref: an atomic add through a lookup result not yet checked.
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
r1 = 1
lock *(u64 *)(r0 + 0) += r1    ; error: atomic-region
r0 = 0
exit
