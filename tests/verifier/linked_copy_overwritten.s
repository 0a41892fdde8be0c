# mem-bounds: the copy is overwritten before the check, which then says nothing about
# the index.
# entry: mem 64
r2 = *(u64 *)(r1 + 0)
r3 = r2
r3 = *(u64 *)(r1 + 8)
if r3 > 56 goto out
r1 += r2
r0 = *(u64 *)(r1 + 0)    ; error: mem-bounds
exit
out:
r0 = 0
exit
