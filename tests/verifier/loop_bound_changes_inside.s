# loop-bound: the bound is reloaded from input memory every iteration, so no iteration
# count can be proven.
# complexity: 20000
# entry: mem 8
r0 = 0
r2 = 0
loop:
r3 = *(u64 *)(r1 + 0)
r2 += 1
if r2 < r3 goto loop     ; error: loop-bound
exit
