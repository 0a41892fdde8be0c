# mem-scalar: a load through a map reference (the map itself is not memory).
.map m array 4 8 4
r1 = map_idx(0) ll
r0 = *(u64 *)(r1 + 0)    ; error: mem-scalar
exit
