# stack-uninit, accepted: ringbuf_output reads exactly the 16 initialised bytes.
.map rb ringbuf 0 0 4096
r1 = 0
*(u64 *)(r10 - 16) = r1
*(u64 *)(r10 - 8) = r1
r2 = r10
r2 += -16
r3 = 16
r4 = 0
r1 = map_idx(0) ll
call 130
r0 = 0
exit
