# loop-bound, accepted: a bound read from a map value, clamped with `if n > 32` first.
# complexity: 200000
.map cfg array 4 8 1
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
r7 = 0
if r0 == 0 goto out
r6 = *(u64 *)(r0 + 0)
if r6 > 32 goto out
r1 = 0
loop:
r7 += 1
r1 += 1
if r1 < r6 goto loop
out:
r0 = r7
exit
