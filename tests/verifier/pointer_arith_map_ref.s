# pointer-arith: arithmetic on a map reference.
.map m array 4 8 4
r1 = map_idx(0) ll
r1 += 8                  ; error: pointer-arith
r0 = 0
exit
