# mem-bounds: conformance-style entry of 16 bytes; a u32 at offset 13 ends past it.
# entry: mem 16
r0 = *(u32 *)(r1 + 13)   ; error: mem-bounds the input memory (16 bytes)
exit
