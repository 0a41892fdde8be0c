# jump-into-ld-imm64, accepted neighbour: jumping over both slots of an ld_imm64.
r0 = 0
if r0 == 0 goto +2
r0 = 0x1122334455667788 ll
exit
