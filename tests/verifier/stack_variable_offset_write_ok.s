# mem-bounds, accepted: a store at a variable offset (fp-32 + 8*i, i < 4) stays in the frame.
call 5
r0 &= 3
r0 <<= 3
r1 = r10
r1 += -32
r1 += r0
*(u64 *)(r1 + 0) = 0
r0 = 0
exit
