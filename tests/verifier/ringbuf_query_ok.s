# helper-arg, accepted: ringbuf_query.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 0
call 134
exit
