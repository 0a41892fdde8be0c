# helper-arg: perf_event_output into a hash map.
.map h hash 4 8 16
r2 = 0
*(u64 *)(r10 - 8) = r2
r2 = map_idx(0) ll
r3 = 0
r4 = r10
r4 += -8
r5 = 8
call 25                  ; error: helper-arg not `h` (hash)
r0 = 0
exit
