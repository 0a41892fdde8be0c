# loop-bound, accepted: a signed counter running from 10 down past zero to -5.
r0 = 0
r1 = 10
loop:
r0 += 1
r1 += -1
if r1 s> -5 goto loop
exit
