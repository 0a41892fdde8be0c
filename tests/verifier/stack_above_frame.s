# mem-bounds: r10 itself points one past the frame; a store at fp+0 is outside.
r1 = 0
*(u64 *)(r10 + 0) = r1   ; error: mem-bounds
r0 = 0
exit
