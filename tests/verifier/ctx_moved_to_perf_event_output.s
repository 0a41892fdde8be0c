# helper-arg: a moved context pointer is not the context.
.map events perf_event_array 4 4 64
r1 += 8
r2 = 0
*(u64 *)(r10 - 8) = r2
r2 = map_idx(0) ll
r3 = 0
r4 = r10
r4 += -8
r5 = 8
call 25                  ; error: helper-arg the context pointer
r0 = 0
exit
