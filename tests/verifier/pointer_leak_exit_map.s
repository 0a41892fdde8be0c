# pointer-leak: the program returns a map reference.
.map m array 4 8 4
r0 = map_idx(0) ll
exit                     ; error: pointer-leak
