# stack-uninit, accepted: two 4-byte stores initialise all 8 bytes of the u64 read.
r1 = 1
*(u32 *)(r10 - 8) = r1
*(u32 *)(r10 - 4) = r1
r0 = *(u64 *)(r10 - 8)
exit
