# mem-bounds: a store into the (empty) probe context.
*(u32 *)(r1 + 0) = 0     ; error: mem-bounds the context
r0 = 0
exit
