# bpf_loop, rejected: the callback must be a subprogram's address (ld_imm64 func), not a
# number.
r1 = 4
r2 = 8
r3 = 0
r4 = 0
call 181                 ; error: helper-arg a subprogram's address
r0 = 0
exit
