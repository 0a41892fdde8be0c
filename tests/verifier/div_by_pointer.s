# pointer-arith: dividing by a pointer.
r1 = 100
r1 /= r10                ; error: pointer-arith
r0 = 0
exit
