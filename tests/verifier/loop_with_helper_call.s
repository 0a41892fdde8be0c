# loop-bound, accepted: a counted loop calling a helper each iteration; the counter lives
# in a callee-saved register.
r6 = 0
r7 = 0
loop:
call 5
r7 += r0
r6 += 1
if r6 < 10 goto loop
r0 = r7
exit
