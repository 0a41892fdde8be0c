# mem-bounds: the same buffer indexed with `& 7`: offsets up to fp+24 leave the stack.
r1 = 0
*(u64 *)(r10 - 32) = r1
*(u64 *)(r10 - 24) = r1
*(u64 *)(r10 - 16) = r1
*(u64 *)(r10 - 8) = r1
call 5
r0 &= 7
r0 <<= 3
r1 = r10
r1 += -32
r1 += r0
r0 = *(u64 *)(r1 + 0)    ; error: mem-bounds
exit
