# loop-bound, accepted: a loop clang unrolled into straight-line code (4 copies of
# `sum += mem[i]`).
# entry: mem 32
r0 = *(u64 *)(r1 + 0)
r2 = *(u64 *)(r1 + 8)
r0 += r2
r2 = *(u64 *)(r1 + 16)
r0 += r2
r2 = *(u64 *)(r1 + 24)
r0 += r2
exit
