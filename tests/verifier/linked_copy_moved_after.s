# mem-bounds: the original moves on after the copy (`r2 += 16`), so the bound on the copy
# (<= 56) says r2 <= 72.
# entry: mem 64
r2 = *(u8 *)(r1 + 0)
r3 = r2
r2 += 16
if r3 > 56 goto out
r1 += r2
r0 = *(u64 *)(r1 + 0)    ; error: mem-bounds offsets 16..72
exit
out:
r0 = 0
exit
