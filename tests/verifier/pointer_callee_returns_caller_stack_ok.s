# pointer-leak, accepted neighbour: a subprogram returns a pointer into its caller's frame.
r1 = 5
*(u64 *)(r10 - 8) = r1
r1 = r10
r1 += -8
call f
r0 = *(u64 *)(r0 + 0)
exit
f:
r0 = r1
exit
