# stack-pointer: reading 4 bytes of a spilled pointer.
*(u64 *)(r10 - 8) = r10
r0 = *(u32 *)(r10 - 8)   ; error: stack-pointer partial read of a spilled pointer
exit
