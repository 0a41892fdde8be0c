# stack-size, accepted neighbour: the same recursion with 64 bytes per frame (7 x 64).
r1 = 6
call f
r0 = 0
exit
f:
r2 = 0
*(u64 *)(r10 - 64) = r2
if r1 == 0 goto done
r1 += -1
call f
done:
r0 = 0
exit
