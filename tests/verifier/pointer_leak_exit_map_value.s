# pointer-leak: the program returns a map value pointer.
.map m array 4 8 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
exit                     ; error: pointer-leak
