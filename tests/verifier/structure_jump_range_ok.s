# jump-range, accepted neighbour: a forward jump onto the last instruction is in range.
r0 = 0
if r0 == 0 goto +1
r0 = 1
exit
