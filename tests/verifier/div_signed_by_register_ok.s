# Signed division and modulo (v4) by a possibly-zero register: accepted too.
call 5
r6 = r0
r1 = -100
r1 s/= r6
r2 = -100
r2 s%= r6
r0 = r1
r0 += r2
exit
