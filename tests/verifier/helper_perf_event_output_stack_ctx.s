# helper-arg: perf_event_output's context may be the context or a number, not a pointer into the stack.
.map events perf_event_array 4 4 64
r2 = 0
*(u64 *)(r10 - 8) = r2
r1 = r10
r1 += -8
r2 = map_idx(0) ll
r3 = 0
r4 = r10
r4 += -8
r5 = 8
call 25                  ; error: helper-arg the context pointer or a number
r0 = 0
exit
