# pointer-arith, accepted: the difference of two pointers into the same region is a number.
r1 = r10
r1 += -8
r2 = r10
r2 += -24
r1 -= r2
r0 = r1
exit
