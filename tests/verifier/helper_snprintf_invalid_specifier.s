# helper-arg: a conversion Linux's bpf_bprintf_prepare refuses (%hd) is refused at load time.
.map .rodata array 4 8 1 0x80 init=2568640000000000
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
call 165                 ; error: helper-arg `%h` at offset 0 is not a conversion
r0 = 0
exit
