# helper-arg (soundness regression): a direct value address into a hash map, which has
# no single value to point at.
.map m hash 4 8 4
r1 = map_idx_value(0, 0) ll   ; error: helper-arg no single value
r2 = 1
*(u64 *)(r1 + 0) = r2
r0 = 0
exit
