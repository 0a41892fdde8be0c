# stack-uninit: the callee reads the caller's slot, which nobody wrote.
r1 = r10
r1 += -8
call get
exit
get:
r0 = *(u64 *)(r1 + 0)    ; error: stack-uninit
exit
