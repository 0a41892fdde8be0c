# stack-pointer: an 8-byte spill of a pointer at fp-12 straddles two slots.
r1 = r10
*(u64 *)(r10 - 12) = r1  ; error: stack-pointer aligned 8-byte store
r0 = 0
exit
