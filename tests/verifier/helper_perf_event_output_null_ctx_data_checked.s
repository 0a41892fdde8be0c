# mem-bounds: with a NULL context, perf_event_output's other arguments are still checked: 16 bytes of data past the 8-byte buffer at the top of the frame.
.map events perf_event_array 4 4 64
r2 = 0
*(u64 *)(r10 - 8) = r2
r1 = 0
r2 = map_idx(0) ll
r3 = 0
r4 = r10
r4 += -8
r5 = 16
call 25                  ; error: mem-bounds
r0 = 0
exit
