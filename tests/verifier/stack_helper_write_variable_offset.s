# stack-uninit (soundness regression): a helper writing 8 bytes at fp-32 or fp-24 (the
# offset varies) certainly initialises neither slot, so reading fp-32 is rejected.
.map m array 4 8 4
r6 = 0
*(u32 *)(r10 - 4) = r6
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r6 = *(u64 *)(r0 + 0)
r6 &= 8
r1 = r10
r1 += -32
r1 += r6
r2 = r10
r2 += -40
r3 = r10
r3 += -48
call 503
r0 = *(u64 *)(r10 - 32)  ; error: stack-uninit
exit
out:
r0 = 0
exit
