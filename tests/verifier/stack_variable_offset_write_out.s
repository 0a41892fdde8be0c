# mem-bounds: a store at fp-8 + 8*i for i < 4 runs past the top of the frame.
call 5
r0 &= 3
r0 <<= 3
r1 = r10
r1 += -8
r1 += r0
*(u64 *)(r1 + 0) = 0     ; error: mem-bounds
r0 = 0
exit
