# stack-pointer: a pointer stored with a 4-byte store would be cut in half.
r1 = r10
*(u32 *)(r10 - 8) = r1   ; error: stack-pointer aligned 8-byte store
r0 = 0
exit
