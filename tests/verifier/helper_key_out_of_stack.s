# mem-bounds: an 8-byte key at fp-4 runs past the top of the frame.
.map h hash 8 8 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1                   ; error: mem-bounds
r0 = 0
exit
