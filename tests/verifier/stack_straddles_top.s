# mem-bounds: a u64 at fp-4 runs 4 bytes past the top of the frame.
r1 = 0
*(u64 *)(r10 - 4) = r1   ; error: mem-bounds at r10-4 is outside the stack frame
r0 = 0
exit
