# helper-arg: submitting a map value, which was never reserved.
.map m array 4 8 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r1 = r0
r2 = 0
call 132                 ; error: helper-arg reserved ringbuf record
out:
r0 = 0
exit
