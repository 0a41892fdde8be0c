# ctx-access, accepted: a context pointer moved by a variable amount but never used is
# harmless (the check is made where the pointer is used).
r6 = r1
call 5
r6 += r0
r0 = 0
exit
