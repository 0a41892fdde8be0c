# infinite-loop, accepted: each iteration changes only a counter, so no state repeats
# along the path, and the counter reaches its bound.
r0 = 0
r1 = 0
loop:
r1 += 1
if r1 != 5 goto loop
exit
