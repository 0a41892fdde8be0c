# pointer-arith: byte-swapping a pointer.
r1 = r10
r1 = be64 r1             ; error: pointer-arith
r0 = 0
exit
