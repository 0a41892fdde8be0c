# recursion: even recursion with a base case is rejected (a GPU thread's stack cannot grow,
# and Linux rejects it too).
r1 = 6
call f
r0 = 0
exit
f:
r2 = 0
*(u64 *)(r10 - 64) = r2
if r1 == 0 goto done
r1 += -1
call f                   ; error: recursion
done:
r0 = 0
exit
