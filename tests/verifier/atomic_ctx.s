# atomic-region: an atomic on the probe context.
r2 = 1
lock *(u64 *)(r1 + 0) += r2    ; error: atomic-region
r0 = 0
exit
