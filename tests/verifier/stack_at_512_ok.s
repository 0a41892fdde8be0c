# mem-bounds, accepted: fp-512 is the deepest stack slot.
r1 = 0
*(u64 *)(r10 - 512) = r1
r0 = *(u64 *)(r10 - 512)
exit
