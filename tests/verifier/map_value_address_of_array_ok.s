# helper-arg, accepted neighbour: a direct value address into a global-data array
# (`.data`), written at its last u64.
.map .data array 4 16 1 0x400
r1 = map_idx_value(0, 8) ll
r2 = 1
*(u64 *)(r1 + 0) = r2
r0 = 0
exit
