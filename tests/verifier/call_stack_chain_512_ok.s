# stack-size, accepted: two frames of 256 bytes each: exactly 512 together.
r1 = 0
*(u64 *)(r10 - 256) = r1
call f
exit
f:
r1 = 0
*(u64 *)(r10 - 256) = r1
r0 = 0
exit
