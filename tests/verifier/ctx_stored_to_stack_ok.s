# ctx-access, accepted: the context pointer saved on the stack and restored for a helper.
.map events perf_event_array 4 4 64
*(u64 *)(r10 - 16) = r1
r1 = 0
*(u64 *)(r10 - 8) = r1
r1 = *(u64 *)(r10 - 16)
r2 = map_idx(0) ll
r3 = 0
r4 = r10
r4 += -8
r5 = 8
call 25
r0 = 0
exit
