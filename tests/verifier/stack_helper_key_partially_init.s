# stack-uninit: an 8-byte hash key of which only 4 bytes were written.
.map h hash 8 8 16
r1 = 0
*(u32 *)(r10 - 8) = r1
r2 = r10
r2 += -8
r1 = map_idx(0) ll
call 1                   ; error: stack-uninit r10-4
r0 = 0
exit
