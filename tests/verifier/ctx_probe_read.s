# mem-bounds: a probe's context is empty (its layouts are not defined yet), so any read of
# it is rejected.
r0 = *(u64 *)(r1 + 0)    ; error: mem-bounds the context (0 bytes)
exit
