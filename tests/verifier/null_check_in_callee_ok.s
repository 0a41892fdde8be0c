# null-deref, accepted: the result is passed to a subprogram that checks and reads it.
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
r1 = r0
call f
exit
f:
r0 = 0
if r1 == 0 goto done
r0 = *(u64 *)(r1 + 0)
done:
exit
