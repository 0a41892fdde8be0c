# mem-bounds: fp-520 lies below the 512-byte stack.
r1 = 0
*(u64 *)(r10 - 520) = r1   ; error: mem-bounds the stack
r0 = 0
exit
