# loop-bound, accepted: a counted loop with a constant bound, with its cost bound.
# cost: 33
r0 = 0
r1 = 0
loop:
r0 += r1
r1 += 1
if r1 < 10 goto loop
exit
