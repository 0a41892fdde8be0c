# ringbuf-leak, accepted: reserve then discard on one path, submit on the other.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 16
r3 = 0
call 131
if r0 == 0 goto out
r6 = r0
call 5
r1 = r6
r2 = 0
if r0 > 100 goto drop
call 132
goto out
drop:
call 133
out:
r0 = 0
exit
