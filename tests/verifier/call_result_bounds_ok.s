# mem-bounds, accepted: a subprogram returns an index it bounded; the caller uses it.
# entry: mem 64
r6 = r1
call idx
r6 += r0
r0 = *(u64 *)(r6 + 0)
exit
idx:
call 5
r0 &= 56
exit
