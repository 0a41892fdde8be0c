# loop-bound, accepted: the counter is spilled to the stack and filled back each
# iteration (a spilled number keeps its exact value).
r1 = 0
*(u64 *)(r10 - 8) = r1
r0 = 0
loop:
r1 = *(u64 *)(r10 - 8)
r0 += r1
r1 += 1
*(u64 *)(r10 - 8) = r1
if r1 < 12 goto loop
exit
