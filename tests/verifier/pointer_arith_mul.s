# pointer-arith: multiplying a pointer.
r1 = r10
r1 *= 2                  ; error: pointer-arith
r0 = 0
exit
