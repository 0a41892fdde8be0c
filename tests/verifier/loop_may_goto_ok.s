# may_goto, accepted: a loop to n (from memory), bounded by may_goto's budget of 2^23:
# 2^23 x 4 (may_goto, the test, the add, the goto), the may_goto that jumps, and the 4
# outside.
# entry: mem 8
# cost: 33554437
r6 = *(u32 *)(r1 + 0)
r7 = 0
loop:
may_goto out
if r7 >= r6 goto out
r7 += 1
goto loop
out:
r0 = r7
exit
