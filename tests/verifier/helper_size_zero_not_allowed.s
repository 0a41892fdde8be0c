# helper-arg: trace_printk's format size may not be 0.
.map .rodata array 4 8 1 0x80 init=6869210a00000000
r1 = map_idx_value(0, 0) ll
r2 = 0
call 6                   ; error: helper-arg cannot be 0
r0 = 0
exit
