# helper-arg, accepted: perf_event_output's context has no GPU meaning (its lowering never reads r1), so NULL is taken, as bpftime's probes pass it.
.map events perf_event_array 4 4 64
r2 = 0
*(u64 *)(r10 - 8) = r2
r1 = 0
r2 = map_idx(0) ll
r3 = 0xffffffff ll
r4 = r10
r4 += -8
r5 = 8
call 25
r0 = 0
exit
