# helper-arg: puts wants a string in read-only data, not on the stack.
r1 = 0x216968 ll
*(u64 *)(r10 - 8) = r1
r1 = r10
r1 += -8
call 501                 ; error: helper-arg read-only data
r0 = 0
exit
