# stack-pointer (soundness regression): an atomic add on a spilled pointer would turn
# the pointer into a number that can then be read back and leaked.
*(u64 *)(r10 - 8) = r10
r1 = 1
lock *(u64 *)(r10 - 8) += r1   ; error: stack-pointer atomic on a spilled pointer
r0 = *(u64 *)(r10 - 8)
exit
