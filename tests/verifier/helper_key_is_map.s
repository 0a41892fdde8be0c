# mem-scalar: the key argument is a map reference, not memory.
.map m array 4 8 4
r1 = map_idx(0) ll
r2 = r1
call 1                   ; error: mem-scalar
r0 = 0
exit
