# stack-size (soundness regression): recursion seven frames deep with 400 bytes each;
# the combined stack is counted along the chain the recursion really builds.
r1 = 6
call f
r0 = 0
exit
f:
r2 = 0
*(u64 *)(r10 - 400) = r2
if r1 == 0 goto done
r1 += -1
call f                   ; error: stack-size 2800 bytes of stack
done:
r0 = 0
exit
