# mem-bounds: 0x80000000 spilled by a 4-byte store and filled sign-extended (`s32`) is
# -2^31: a negative index.
# entry: mem 64
r6 = r1
r2 = 0x80000000 ll
*(u32 *)(r10 - 8) = r2
r1 = *(s32 *)(r10 - 8)
r6 += r1
r0 = *(u8 *)(r6 + 0)     ; error: mem-bounds
exit
