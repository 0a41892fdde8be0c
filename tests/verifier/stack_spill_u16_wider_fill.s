# stack-uninit: a 2-byte spill filled by a 4-byte load reads two unwritten bytes.
r1 = 5
*(u16 *)(r10 - 8) = r1
r0 = *(u32 *)(r10 - 8)   ; error: stack-uninit
exit
