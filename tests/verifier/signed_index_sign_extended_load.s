# mem-bounds: a sign-extended byte (-128..127) checked only `s< 56` can be negative.
# entry: mem 64
r2 = *(s8 *)(r1 + 0)
if r2 s> 56 goto out
r1 += r2
r0 = *(u8 *)(r1 + 0)     ; error: mem-bounds offsets -128..56
exit
out:
r0 = 0
exit
