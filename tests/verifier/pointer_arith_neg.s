# pointer-arith: negating a pointer.
r1 = r10
r1 = -r1                 ; error: pointer-arith
r0 = 0
exit
