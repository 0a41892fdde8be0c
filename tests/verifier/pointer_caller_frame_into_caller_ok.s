# pointer-leak, accepted neighbour: a callee stores a pointer into its caller's own frame
# into the caller's stack (it stays valid after the return).
r1 = r10
r1 += -8
r2 = 0
*(u64 *)(r10 - 16) = r2
call f
r1 = *(u64 *)(r10 - 8)
r0 = *(u64 *)(r1 + 0)
exit
f:
r2 = r1
r2 += -8
*(u64 *)(r1 + 0) = r2
r0 = 0
exit
