# mem-scalar: a load through a number.
r1 = 4096
r0 = *(u64 *)(r1 + 0)    ; error: mem-scalar not a pointer
exit
