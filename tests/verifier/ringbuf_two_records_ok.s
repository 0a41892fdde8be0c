# ringbuf-leak, accepted: two records held at once, released in the opposite order.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 8
r3 = 0
call 131
if r0 == 0 goto out
r6 = r0
r1 = map_idx(0) ll
r2 = 8
r3 = 0
call 131
if r0 == 0 goto drop6
r1 = r0
r2 = 0
call 132
drop6:
r1 = r6
r2 = 0
call 133
out:
r0 = 0
exit
