# loop-bound: a bound read from input memory, not clamped.
# complexity: 20000
# entry: mem 8
r6 = *(u64 *)(r1 + 0)
r1 = 0
r0 = 0
loop:
r0 += 1
r1 += 1
if r1 < r6 goto loop     ; error: loop-bound
exit
