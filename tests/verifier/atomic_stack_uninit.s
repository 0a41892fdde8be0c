# stack-uninit: an atomic add reads the slot first, so it must be initialised.
r1 = 1
lock *(u64 *)(r10 - 8) += r1   ; error: stack-uninit
r0 = 0
exit
