# stack-uninit: reading a stack slot nothing wrote.
r0 = *(u64 *)(r10 - 8)   ; error: stack-uninit r10-8
exit
