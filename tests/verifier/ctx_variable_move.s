# ctx-access: the context pointer moved by a variable amount, then read through.
r6 = r1
call 5
r6 += r0
r0 = *(u8 *)(r6 + 0)     ; error: ctx-access only move by constants
exit
