# rodata-write: get_block_idx writes its x output into .rodata.
.map .rodata array 4 24 1 0x80
r1 = map_idx_value(0, 0) ll
r2 = r10
r2 += -8
r3 = r10
r3 += -16
call 503                 ; error: rodata-write
r0 = 0
exit
