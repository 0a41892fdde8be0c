# ringbuf-leak: on one path the record is neither submitted nor discarded.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 16
r3 = 0
call 131
if r0 == 0 goto out
r6 = r0
call 5
if r0 > 100 goto out
r1 = r6
r2 = 0
call 132
out:
r0 = 0
exit                     ; error: ringbuf-leak
