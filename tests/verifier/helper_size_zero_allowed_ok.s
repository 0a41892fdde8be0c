# helper-arg, accepted: ringbuf_output may send 0 bytes.
.map rb ringbuf 0 0 4096
r2 = r10
r2 += -8
r3 = 0
r4 = 0
r1 = map_idx(0) ll
call 130
r0 = 0
exit
