# helper-arg: bpf_snprintf's data_len must be a multiple of 8 (an array of u64).
.map .rodata array 4 8 1 0x80 init=2564000000000000
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
r5 = 12
call 165                 ; error: helper-arg multiple of 8
r0 = 0
exit
