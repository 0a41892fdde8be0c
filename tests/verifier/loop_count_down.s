# loop-bound, accepted: a counter that counts down from a constant to zero.
r0 = 0
r1 = 16
loop:
r0 += 3
r1 += -1
if r1 != 0 goto loop
exit
