# mem-scalar: a store through NULL.
r1 = 0
*(u64 *)(r1 + 0) = 1     ; error: mem-scalar
r0 = 0
exit
