# mem-bounds: the size may be up to 15, past the 8-byte buffer at the top of the frame.
.map rb ringbuf 0 0 4096
r1 = 0
*(u64 *)(r10 - 8) = r1
call 5
r3 = r0
r3 &= 15
r2 = r10
r2 += -8
r4 = 0
r1 = map_idx(0) ll
call 130                 ; error: mem-bounds
r0 = 0
exit
