# stack-uninit: the same with a size of 24: the helper would read 8 unwritten bytes.
.map rb ringbuf 0 0 4096
r1 = 0
*(u64 *)(r10 - 16) = r1
*(u64 *)(r10 - 8) = r1
r2 = r10
r2 += -24
r3 = 24
r4 = 0
r1 = map_idx(0) ll
call 130                 ; error: stack-uninit r10-24
r0 = 0
exit
