# loop-bound, accepted: two nested counted loops (8 x 8 iterations).
r0 = 0
r1 = 0
outer:
r2 = 0
inner:
r0 += r2
r2 += 1
if r2 < 8 goto inner
r1 += 1
if r1 < 8 goto outer
exit
