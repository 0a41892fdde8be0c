# uninit-register, accepted: a subprogram whose result is unused may leave r0 unset (clang
# does, when it has propagated the result into the caller).
r1 = r10
r1 += -8
call fill
r0 = *(u64 *)(r10 - 8)
exit
fill:
r2 = 31810
*(u64 *)(r1 + 0) = r2
exit
