# stack-uninit (soundness regression): overwriting one byte of a spilled pointer leaves
# the other seven unreadable, so the pointer's bits cannot come back as a number (and
# then be stored into a map).
.map out array 4 8 1
*(u64 *)(r10 - 8) = r10
r1 = 0
*(u8 *)(r10 - 8) = r1
r6 = *(u64 *)(r10 - 8)   ; error: stack-uninit
r0 = 0
exit
