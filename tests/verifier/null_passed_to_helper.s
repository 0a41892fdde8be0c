# null-deref: an unchecked lookup result passed as a helper's key argument.
.map m array 4 16 4
.map h hash 8 8 16
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
r2 = r0
r1 = map_idx(1) ll
call 1                   ; error: null-deref
r0 = 0
exit
