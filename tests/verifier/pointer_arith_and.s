# pointer-arith: masking a pointer (`& ~7` to align it).
r1 = r10
r1 &= -8                 ; error: pointer-arith
r0 = 0
exit
