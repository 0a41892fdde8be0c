# loop-bound without --loop-budget: the same loop as loop_budget_ok.s is rejected.
# entry: mem 8
# complexity: 20000
r6 = *(u32 *)(r1 + 0)
r7 = 0
loop:
if r7 >= r6 goto out
r7 += 1
goto loop                ; error: loop-bound
out:
r0 = r7
exit
