# mem-bounds and stack-uninit, accepted: a variable offset (0..3) into a 32-byte buffer
# that is fully initialised; an 8-byte read at fp-32 + 8*i stays inside it.
r1 = 0
*(u64 *)(r10 - 32) = r1
*(u64 *)(r10 - 24) = r1
*(u64 *)(r10 - 16) = r1
*(u64 *)(r10 - 8) = r1
call 5
r0 &= 3
r0 <<= 3
r1 = r10
r1 += -32
r1 += r0
r0 = *(u64 *)(r1 + 0)
exit
