# A program without a loop whose paths do not merge: each `if r6 & bit` splits on an
# unknown bit and r7 (which a later branch reads) adds the bit on one side, so every
# path reaches the end with its own r7: 2^16 paths. At the limit the verifier says so
# (too-complex), not "loop": there is none.
# complexity: 5000
call 5
r6 = r0
r7 = 0
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
if r6 & 4096 goto +1
r7 += 4096
if r6 & 8192 goto +1
r7 += 8192
if r6 & 16384 goto +1
r7 += 16384
if r6 & 32768 goto +1
r7 += 32768
if r7 == 12345 goto out     ; error: too-complex too many instructions explored
r0 = 0
exit
out:
r0 = 1
exit
