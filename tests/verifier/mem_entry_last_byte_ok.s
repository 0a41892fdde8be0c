# mem-bounds, accepted: conformance-style entry, r1 = 16 bytes; read the last byte and the
# last u64.
# entry: mem 16
r0 = *(u8 *)(r1 + 15)
r2 = *(u64 *)(r1 + 8)
r0 += r2
exit
