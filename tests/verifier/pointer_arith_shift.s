# pointer-arith: shifting a pointer.
r1 = r10
r1 >>= 3                 ; error: pointer-arith
r0 = 0
exit
