# mem-bounds: a stack pointer moved by an unknown amount.
call 5
r1 = r10
r1 += r0
r0 = *(u8 *)(r1 - 1)     ; error: mem-bounds
exit
