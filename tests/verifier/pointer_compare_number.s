# pointer-arith: comparing a pointer with a number other than 0 leaks its address.
r1 = r10
r0 = 0
if r1 > 4096 goto out    ; error: pointer-arith comparing a pointer with a number
r0 = 1
out:
exit
