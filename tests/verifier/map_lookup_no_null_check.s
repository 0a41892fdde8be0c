# The lookup result is used without comparing it with NULL.
.map counters array 4 8 16
r1 = 3
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
r1 = *(u64 *)(r0 + 0)    ; error: null-deref may be NULL
r0 = 0
exit
