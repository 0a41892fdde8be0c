# numeric iterator, accepted: bpf_for(i, 0, 16) writes byte i of a 16-byte stack buffer:
# every i is inside it.
r1 = r10
r1 += -24
r2 = 0
r3 = 16
call kfunc(bpf_iter_num_new)
loop:
r1 = r10
r1 += -24
call kfunc(bpf_iter_num_next)
if r0 == 0 goto out
r2 = *(u32 *)(r0 + 0)
r3 = r10
r3 += -16
r3 += r2
r4 = 0
*(u8 *)(r3 + 0) = r4
goto loop
out:
r1 = r10
r1 += -24
call kfunc(bpf_iter_num_destroy)
r0 = 0
exit
