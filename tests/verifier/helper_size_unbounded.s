# helper-arg: ringbuf_output with a size that has no upper bound.
.map rb ringbuf 0 0 4096
r1 = 0
*(u64 *)(r10 - 8) = r1
call 5
r3 = r0
r2 = r10
r2 += -8
r4 = 0
r1 = map_idx(0) ll
call 130                 ; error: helper-arg has no upper bound
r0 = 0
exit
