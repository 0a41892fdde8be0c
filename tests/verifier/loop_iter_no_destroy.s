# numeric iterator, rejected: the iterator is never destroyed (Linux: unreleased
# reference).
r1 = r10
r1 += -8
r2 = 0
r3 = 4
call kfunc(bpf_iter_num_new)
loop:
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_next)
if r0 == 0 goto out
goto loop
out:
r0 = 0
exit                     ; error: iterator is not destroyed
