# ringbuf-leak, accepted: the record is filled and submitted by a subprogram.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 16
r3 = 0
call 131
if r0 == 0 goto out
r1 = r0
call send
out:
r0 = 0
exit
send:
*(u64 *)(r1 + 0) = 7
r2 = 0
call 132
r0 = 0
exit
