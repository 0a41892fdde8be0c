# helper-arg: bpf_snprintf's format at a variable offset into .rodata is not one known constant string.
.map .rodata array 4 8 1 0x80 init=2564002575000000
r1 = 7
*(u64 *)(r10 - 16) = r1
r1 = map_idx_value(0, 8) ll
*(u64 *)(r10 - 8) = r1
call 511
r0 &= 4
r1 = r10
r1 += -64
r2 = 32
r3 = map_idx_value(0, 0) ll
r3 += r0
r4 = r10
r4 += -16
r5 = 16
call 165                 ; error: helper-arg offset is not constant
r0 = 0
exit
