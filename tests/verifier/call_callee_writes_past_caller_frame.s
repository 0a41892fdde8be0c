# mem-bounds: the callee writes 8 bytes at the caller's fp-4, past the caller's frame.
r1 = r10
r1 += -4
call fill
r0 = 0
exit
fill:
*(u64 *)(r1 + 0) = 1     ; error: mem-bounds
r0 = 0
exit
