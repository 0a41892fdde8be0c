# helper-arg: map index 1 names no declared map.
.map h hash 4 8 16
r1 = map_idx(1) ll       ; error: helper-arg does not exist
r0 = 0
exit
