# pointer-arith: a 32-bit add to a pointer would drop its high half.
r1 = r10
w1 += -8                 ; error: pointer-arith
r0 = 0
exit
