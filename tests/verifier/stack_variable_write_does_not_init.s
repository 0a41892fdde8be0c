# stack-uninit: a store at a variable offset initialises no byte for certain, so reading
# fp-32 afterwards is rejected.
call 5
r0 &= 3
r0 <<= 3
r1 = r10
r1 += -32
r1 += r0
*(u64 *)(r1 + 0) = 0
r0 = *(u64 *)(r10 - 32)  ; error: stack-uninit
exit
