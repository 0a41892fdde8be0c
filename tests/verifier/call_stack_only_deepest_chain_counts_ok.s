# stack-size, accepted: main (256 bytes) calls f and g (256 bytes each) one after the
# other, never nested: each chain is 512 bytes.
r1 = 0
*(u64 *)(r10 - 256) = r1
call f
call g
exit
f:
r1 = 0
*(u64 *)(r10 - 256) = r1
r0 = 0
exit
g:
r1 = 0
*(u64 *)(r10 - 256) = r1
r0 = 0
exit
