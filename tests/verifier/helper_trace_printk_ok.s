# helper-arg, accepted: trace_printk with a 5-byte format in .rodata and one argument.
.map .rodata array 4 8 1 0x80 init=6869210a00000000
r1 = map_idx_value(0, 0) ll
r2 = 5
r3 = 42
call 6
r0 = 0
exit
