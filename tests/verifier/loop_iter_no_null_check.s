# numeric iterator, rejected: next's result is read without the NULL check (NULL once
# the iterator is drained).
r1 = r10
r1 += -8
r2 = 0
r3 = 4
call kfunc(bpf_iter_num_new)
r7 = 0
loop:
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_next)
r2 = *(u32 *)(r0 + 0)    ; error: mem-scalar
r7 += r2
if r7 > 100 goto out
goto loop
out:
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_destroy)
r0 = 0
exit
