# mem-scalar: the key argument is a number.
.map m array 4 8 4
r1 = map_idx(0) ll
r2 = 0
call 1                   ; error: mem-scalar
r0 = 0
exit
