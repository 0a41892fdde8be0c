# loop-bound, accepted: the shape clang -O2 emits for `for (i = 0; i < 4; i++) sum +=
# mem[i]` when it keeps the loop: a pointer that advances and a 32-bit counter.
# entry: mem 32
r0 = 0
w2 = 0
r3 = r1
loop:
r4 = *(u64 *)(r3 + 0)
r0 += r4
r3 += 8
w2 += 1
if w2 != 4 goto loop
exit
