# infinite-loop, accepted: the inner loop's head sees the same state in every outer
# iteration except for the outer counter; a repeat only counts along one path.
r0 = 0
r6 = 0
outer:
r7 = 0
inner:
r7 += 1
if r7 < 3 goto inner
r6 += 1
if r6 < 3 goto outer
exit
