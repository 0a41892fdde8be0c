# pointer-arith: the difference of pointers into different regions.
.map m array 4 8 4
r1 = map_idx_value(0, 0) ll
r2 = r10
r1 -= r2                 ; error: pointer-arith
r0 = 0
exit
