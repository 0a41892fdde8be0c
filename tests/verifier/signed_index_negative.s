# A signed index checked only from above can go negative.
# entry: mem 64
r2 = *(u64 *)(r1 + 0)
if r2 s> 56 goto out
r1 += r2
r0 = *(u64 *)(r1 + 0)    ; error: mem-bounds
exit
out:
r0 = 0
exit
