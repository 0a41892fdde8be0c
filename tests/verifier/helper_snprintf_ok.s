# helper-arg, accepted: bpf_snprintf into a 32-byte stack buffer with a .rodata format, an integer and a %s of a .rodata string, arguments in a stack array of u64.
.map .rodata array 4 16 1 0x80 init=25642d25737c00006770750000000000
r1 = 7
*(u64 *)(r10 - 16) = r1
r1 = map_idx_value(0, 8) ll
*(u64 *)(r10 - 8) = r1
r1 = r10
r1 += -64
r2 = 32
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -16
r5 = 16
call 165
r0 = 0
exit
