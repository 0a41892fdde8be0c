# uninit-register: the caller reads the result a subprogram never set.
r1 = r10
r1 += -8
call fill
r0 += 1                  ; error: uninit-register r0
exit
fill:
r2 = 31810
*(u64 *)(r1 + 0) = r2
exit
