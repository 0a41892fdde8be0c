# helper-arg: the reserve size must be a known constant.
.map rb ringbuf 0 0 4096
call 5
r2 = r0
r2 &= 63
r2 += 1
r1 = map_idx(0) ll
r3 = 0
call 131                 ; error: helper-arg known constant
r0 = 0
exit
