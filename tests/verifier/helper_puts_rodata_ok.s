# helper-arg, accepted: puts with a NUL-terminated string in .rodata.
.map .rodata array 4 8 1 0x80 init=6869210000000000
r1 = map_idx_value(0, 0) ll
call 501
r0 = 0
exit
