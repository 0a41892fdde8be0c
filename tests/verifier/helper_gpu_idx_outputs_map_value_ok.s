# helper-arg, accepted: get_block_dim writes its three outputs into a 24-byte map value.
.map dims array 4 24 1
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r1 = r0
r2 = r0
r2 += 8
r3 = r0
r3 += 16
call 504
out:
r0 = 0
exit
