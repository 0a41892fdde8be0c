# numeric iterator (bpf_for), accepted: sums 0..n-1 with n from memory. next is the
# loop's head; the cost bound is the 9 instructions before it, 2^23 x 7 (next, the check,
# the load, the add, the goto, and the two that set r1 again), the last next (NULL) and
# the 6 after it (the check, the destroy and its set-up, the result, exit):
# 9 + 58720256 + 1 + 6.
# entry: mem 8
# cost: 58720272
r6 = *(u32 *)(r1 + 0)
r1 = r10
r1 += -8
r2 = 0
r3 = r6
call kfunc(bpf_iter_num_new)
r7 = 0
loop:
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_next)
if r0 == 0 goto out
r2 = *(u32 *)(r0 + 0)
r7 += r2
goto loop
out:
r1 = r10
r1 += -8
call kfunc(bpf_iter_num_destroy)
r0 = r7
exit
