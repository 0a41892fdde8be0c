# helper-arg, accepted: a checked map value used as the key of another lookup (8-byte key,
# 16-byte value).
.map m array 4 16 4
.map h hash 8 8 16
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r2 = r0
r1 = map_idx(1) ll
call 1
out:
r0 = 0
exit
