# stack-uninit, accepted neighbour: a helper writing through constant offsets initialises
# its three 8-byte outputs (get_thread_idx).
r1 = r10
r1 += -8
r2 = r10
r2 += -16
r3 = r10
r3 += -24
call 505
r0 = *(u64 *)(r10 - 8)
r1 = *(u64 *)(r10 - 16)
r0 += r1
r1 = *(u64 *)(r10 - 24)
r0 += r1
exit
