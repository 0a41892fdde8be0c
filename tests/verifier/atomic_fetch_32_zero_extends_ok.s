# atomic-region, accepted: a 32-bit fetch-add returns a zero-extended u32, usable as an
# index after masking.
.map .bss array 4 64 1
r6 = map_idx_value(0, 0) ll
w1 = 1
w1 = atomic_fetch_add((u32 *)(r6 + 0), w1)
r1 &= 7
r1 <<= 3
r6 += r1
r0 = *(u64 *)(r6 + 0)
exit
