# loop-bound, accepted: a counted loop that may also leave early (a `break` on a value
# read from memory each iteration).
# entry: mem 64
r0 = 0
r3 = 0
loop:
r4 = r1
r4 += r3
r5 = *(u8 *)(r4 + 0)
if r5 == 0 goto done
r0 += r5
r3 += 1
if r3 < 64 goto loop
done:
exit
