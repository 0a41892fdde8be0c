# helper-arg: map_lookup_elem on a ringbuf, which has no keys or values.
.map rb ringbuf 0 0 4096
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1                   ; error: helper-arg not `rb` (ringbuf)
r0 = 0
exit
