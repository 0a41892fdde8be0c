# numeric iterator, rejected: a store into the iterator's slot (which would move the
# iterator and unbound its loop).
r1 = r10
r1 += -8
r2 = 0
r3 = 4
call kfunc(bpf_iter_num_new)
r1 = 0
*(u32 *)(r10 - 8) = r1   ; error: iterator only the bpf_iter_num kfuncs
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_destroy)
r0 = 0
exit
