# numeric iterator, rejected: each iteration destroys the iterator and makes a new one,
# which would start its count again and never end: the loop's head keeps no iterator
# there, so next has none to move.
r1 = r10
r1 += -8
r2 = 0
r3 = 4
call kfunc(bpf_iter_num_new)
loop:
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_next)   ; error: iterator does not point at a live iterator
if r0 == 0 goto out
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_destroy)
r1 = r10
r1 += -8
r2 = 0
r3 = 4
call kfunc(bpf_iter_num_new)
goto loop
out:
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_destroy)
r0 = 0
exit
