# ctx-access: a variably moved context pointer handed to a helper that reads memory.
.map rb ringbuf 0 0 4096
r6 = r1
call 5
r6 += r0
r2 = r6
r3 = 8
r4 = 0
r1 = map_idx(0) ll
call 130                 ; error: ctx-access
r0 = 0
exit
