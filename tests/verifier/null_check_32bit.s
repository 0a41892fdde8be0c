# pointer-arith: a 32-bit compare of the result with 0 is not a NULL check (it would test
# only the low half of the pointer).
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if w0 == 0 goto out      ; error: pointer-arith comparing a pointer with a number
r1 = *(u64 *)(r0 + 0)
out:
r0 = 0
exit
