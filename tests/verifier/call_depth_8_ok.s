# call-depth, accepted: main and seven nested subprograms: 8 frames, the limit.
call f1
exit
f1:
call f2
exit
f2:
call f3
exit
f3:
call f4
exit
f4:
call f5
exit
f5:
call f6
exit
f6:
call f7
exit
f7:
r0 = 7
exit
