# uninit-register, accepted neighbour: r2 is written on both paths.
r0 = 0
r2 = 0
if r0 == 0 goto skip
r2 = 1
skip:
r0 = r2
exit
