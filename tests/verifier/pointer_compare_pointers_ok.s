# pointer-arith, accepted: two pointers into the stack compared with each other.
r1 = r10
r1 += -8
r2 = r10
r2 += -16
r0 = 0
if r1 > r2 goto out
r0 = 1
out:
exit
