# loop-bound, accepted: a 32-bit counter compared as 32 bits (`w1 < 20`).
r0 = 0
w1 = 0
loop:
r0 += 1
w1 += 1
if w1 < 20 goto loop
exit
