# loop-bound and mem-bounds, accepted: a loop writing each of the 8 u64 slots of a
# 64-byte map value through an index scaled by 8.
.map arr array 4 64 1
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r1 = 0
loop:
r2 = r1
r2 <<= 3
r3 = r0
r3 += r2
*(u64 *)(r3 + 0) = r1
r1 += 1
if r1 < 8 goto loop
out:
r0 = 0
exit
