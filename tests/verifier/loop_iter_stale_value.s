# numeric iterator, rejected: a value pointer kept past the next call would read the new
# value (or the zeroes of a drained iterator), not one in the range it was given: every
# copy is forgotten when the iterator moves.
r1 = r10
r1 += -8
r2 = 5
r3 = 9
call kfunc(bpf_iter_num_new)
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_next)
if r0 == 0 goto out
r9 = r0
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_next)
r2 = *(u32 *)(r9 + 0)    ; error: uninit-register r9
out:
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_destroy)
r0 = 0
exit
