# ctx-access: the context pointer moved by a variable amount.
r6 = r1
call 5
r6 += r0                 ; error: ctx-access only move by constants
r0 = 0
exit
