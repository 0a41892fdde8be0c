# pointer-arith: adding two pointers.
r1 = r10
r1 += r10                ; error: pointer-arith
r0 = 0
exit
