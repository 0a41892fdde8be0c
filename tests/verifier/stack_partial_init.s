# stack-uninit: 4 bytes written, 8 read.
r1 = 0
*(u32 *)(r10 - 8) = r1
r0 = *(u64 *)(r10 - 8)   ; error: stack-uninit r10-4
exit
