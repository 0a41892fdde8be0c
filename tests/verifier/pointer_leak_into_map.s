# Storing the frame pointer into a map value would hand a stack address to the host.
.map out array 4 8 1
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
*(u64 *)(r0 + 0) = r10   ; error: pointer-leak
out:
r0 = 0
exit
