# unsupported: an ld_imm64 with a raw map fd (no relocation to a declared map).
r1 = map_fd(3) ll        ; error: unsupported
r0 = 0
exit
