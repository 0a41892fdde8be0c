# mem-bounds: after a 4-byte spill of a bounded index, one of its bytes is overwritten
# with an unknown byte; the fill is then any u32.
.map m array 4 64 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r6 = r0
call 5
r7 = r0
r0 &= 7
*(u32 *)(r10 - 16) = r0
*(u8 *)(r10 - 15) = r7
r1 = *(u32 *)(r10 - 16)
r1 <<= 3
r6 += r1
r0 = *(u64 *)(r6 + 0)    ; error: mem-bounds
out:
r0 = 0
exit
