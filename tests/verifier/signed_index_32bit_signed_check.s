# mem-bounds: a signed 32-bit check `w2 s< 0` on a 32-bit load rules out nothing above
# 2^31 for the 64-bit value? No: w2 = load zero-extends; the signed check on w2 leaves
# 0..0x7fffffff, far past the 64 bytes.
# entry: mem 64
r2 = *(u32 *)(r1 + 0)
if w2 s< 0 goto out
r1 += r2
r0 = *(u8 *)(r1 + 0)     ; error: mem-bounds
exit
out:
r0 = 0
exit
