# unsupported, accepted neighbour: the ld_imm64 forms with a GPU meaning, a 64-bit constant,
# a map reference and a global-data address.
.map m array 4 8 1
.map .bss array 4 8 1
r0 = 0x1122334455667788 ll
r1 = map_idx(0) ll
r2 = map_idx_value(1, 0) ll
r0 = 0
exit
