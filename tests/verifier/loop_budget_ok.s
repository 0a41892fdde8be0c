# --loop-budget, accepted: a loop to n (from memory) that nothing bounds but a budget of
# 100 iterations: 100 x 3 (the test, the add, the goto), the test once more, and the 4
# outside (and the program may end at the head when the budget is spent).
# entry: mem 8
# loop-budget: 100
# cost: 305
r6 = *(u32 *)(r1 + 0)
r7 = 0
loop:
if r7 >= r6 goto out
r7 += 1
goto loop
out:
r0 = r7
exit
