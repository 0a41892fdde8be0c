# State explosion (issue 15, point 5): a loop of 100 iterations with 12 `if (t & bit) acc += bit`
# tests on an unknown t; acc feeds a branch at the end. benches/results/verifier-explosion.md times it.
call 5
r6 = r0
r7 = 0
r8 = 0
loop:
if r6 & 1 goto +1
r7 += 1
if r6 & 2 goto +1
r7 += 2
if r6 & 4 goto +1
r7 += 4
if r6 & 8 goto +1
r7 += 8
if r6 & 16 goto +1
r7 += 16
if r6 & 32 goto +1
r7 += 32
if r6 & 64 goto +1
r7 += 64
if r6 & 128 goto +1
r7 += 128
if r6 & 256 goto +1
r7 += 256
if r6 & 512 goto +1
r7 += 512
if r6 & 1024 goto +1
r7 += 1024
if r6 & 2048 goto +1
r7 += 2048
r6 ^= r7
r8 += 1
if r8 < 100 goto loop
if r7 == 12345 goto out
r0 = 0
exit
out:
r0 = 1
exit
