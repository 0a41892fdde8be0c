# loop-bound, accepted: a `while (i < n)` loop whose bound n comes from memory but is
# masked with `& 15`, so it is at most 15.
# entry: mem 8
r6 = *(u64 *)(r1 + 0)
r6 &= 15
r0 = 0
r1 = 0
loop:
if r1 >= r6 goto done
r0 += r1
r1 += 1
goto loop
done:
exit
