# numeric iterator, rejected: the value next returns is read-only.
r1 = r10
r1 += -8
r2 = 0
r3 = 4
call kfunc(bpf_iter_num_new)
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_next)
if r0 == 0 goto out
r1 = 0
*(u32 *)(r0 + 0) = r1    ; error: iterator read-only
out:
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_destroy)
r0 = 0
exit
