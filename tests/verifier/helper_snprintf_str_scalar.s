# helper-arg: bpf_snprintf's %s argument is a number, which the GPU cannot read safely (Linux reads it with copy_from_kernel_nofault).
.map .rodata array 4 8 1 0x80 init=2573000000000000
r1 = 4096
*(u64 *)(r10 - 16) = r1
r1 = r10
r1 += -64
r2 = 32
r3 = map_idx_value(0, 0) ll
r4 = r10
r4 += -16
r5 = 8
call 165                 ; error: helper-arg the %s argument (data word 0)
r0 = 0
exit
