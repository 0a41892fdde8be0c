# helper-arg: bpf_snprintf's format must be a constant string in read-only data (Linux: ARG_PTR_TO_CONST_STR), not stack bytes.
.map .rodata array 4 8 1 0x80 init=2564000000000000
r1 = 7
*(u64 *)(r10 - 16) = r1
r1 = map_idx_value(0, 8) ll
*(u64 *)(r10 - 8) = r1
r1 = 0x6425 ll
*(u64 *)(r10 - 24) = r1
r1 = r10
r1 += -64
r2 = 32
r3 = r10
r3 += -24
r4 = r10
r4 += -16
r5 = 16
call 165                 ; error: helper-arg read-only data
r0 = 0
exit
