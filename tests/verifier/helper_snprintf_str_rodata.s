# rodata-write: bpf_snprintf would write its output into .rodata.
.map .rodata array 4 8 1 0x80 init=2564000000000000
r1 = 7
*(u64 *)(r10 - 16) = r1
r1 = map_idx_value(0, 8) ll
*(u64 *)(r10 - 8) = r1
r1 = map_idx_value(0, 0) ll
r2 = 4
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -16
r5 = 16
call 165                 ; error: rodata-write
r0 = 0
exit
