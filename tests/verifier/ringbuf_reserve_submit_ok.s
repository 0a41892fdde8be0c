# ringbuf-leak, accepted: reserve, check, fill the 16-byte record, submit.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 16
r3 = 0
call 131
if r0 == 0 goto out
*(u64 *)(r0 + 0) = 1
*(u64 *)(r0 + 8) = 2
r1 = r0
r2 = 0
call 132
out:
r0 = 0
exit
