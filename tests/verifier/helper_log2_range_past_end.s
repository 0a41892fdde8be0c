# mem-bounds: bpf2ptx_log2 of any number may be 63, past 32 bytes.
# entry: mem 32
r6 = r1
r1 = *(u64 *)(r6 + 0)
call 603
r6 += r0
r0 = *(u8 *)(r6 + 0)    ; error: mem-bounds
exit
