# pointer-leak (soundness regression): a callee stores a pointer into its own frame into
# its caller's stack; after the return it would dangle.
r1 = r10
r1 += -8
call f
r1 = *(u64 *)(r10 - 8)
r2 = 5
*(u64 *)(r1 - 8) = r2
r0 = 0
exit
f:
r2 = r10
*(u64 *)(r1 + 0) = r2    ; error: pointer-leak outlive
r0 = 0
exit
