# stack, accepted: a 2-byte spill keeps only the low 16 bits: 0x10003 comes back as 3,
# which indexes an 8-byte buffer.
# entry: mem 8
r6 = r1
r2 = 0x10003
*(u16 *)(r10 - 8) = r2
r1 = *(u16 *)(r10 - 8)
r6 += r1
r0 = *(u8 *)(r6 + 4)
exit
