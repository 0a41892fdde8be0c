# jump-into-ld-imm64: the target is the second slot of a two-slot ld_imm64.
r0 = 0
if r0 == 0 goto +1        ; error: jump-into-ld-imm64 second slot
r0 = 0x1122334455667788 ll
exit
