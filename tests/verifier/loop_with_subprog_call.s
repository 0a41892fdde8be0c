# loop-bound, accepted: a counted loop calling a subprogram each iteration.
r6 = 0
r7 = 0
loop:
r1 = r6
call double
r7 += r0
r6 += 1
if r6 < 10 goto loop
r0 = r7
exit
double:
r0 = r1
r0 += r1
exit
