# stack-uninit: the slot is written on only one path to the read.
call 5
if r0 == 0 goto skip
r1 = 0
*(u64 *)(r10 - 8) = r1
skip:
r0 = *(u64 *)(r10 - 8)   ; error: stack-uninit
exit
