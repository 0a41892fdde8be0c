# ringbuf, accepted neighbour: the record pointer spilled, filled back, written and then
# submitted through the filled copy.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 8
r3 = 0
call 131
if r0 == 0 goto out
*(u64 *)(r10 - 8) = r0
r1 = *(u64 *)(r10 - 8)
r2 = 1
*(u64 *)(r1 + 0) = r2
r2 = 0
call 132
out:
r0 = 0
exit
