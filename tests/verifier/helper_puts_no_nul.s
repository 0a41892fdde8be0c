# helper-arg: the string at offset 4 of .rodata has no NUL before the end.
.map .rodata array 4 8 1 0x80 init=0000000068692121
r1 = map_idx_value(0, 4) ll
call 501                 ; error: helper-arg no NUL
r0 = 0
exit
