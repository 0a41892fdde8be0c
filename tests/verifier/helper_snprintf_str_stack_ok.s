# helper-arg, accepted: bpf_snprintf's %s may take a stack buffer; it reads the initialised bytes from the pointer up (here 8).
.map .rodata array 4 8 1 0x80 init=3c25733e00000000
r1 = 0x6968 ll
*(u64 *)(r10 - 24) = r1
r1 = r10
r1 += -24
*(u64 *)(r10 - 16) = r1
r1 = r10
r1 += -64
r2 = 32
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -16
r5 = 8
call 165
r0 = 0
exit
