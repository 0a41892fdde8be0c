# loop-bound, accepted: 32 iterations with a data-dependent branch in each; pruning keeps
# the exploration linear rather than 2^32 paths.
# entry: mem 32
r0 = 0
r2 = 0
loop:
r3 = r1
r3 += r2
r4 = *(u8 *)(r3 + 0)
if r4 > 100 goto big
r0 += 1
goto next
big:
r0 += 2
next:
r2 += 1
if r2 < 32 goto loop
exit
