# numeric iterator, rejected: next on a slot bpf_iter_num_new never made an iterator.
r1 = 0
*(u64 *)(r10 - 8) = r1
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_next)   ; error: iterator does not point at a live iterator
r0 = 0
exit
