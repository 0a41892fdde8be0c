# helper-arg: submitting a pointer into the middle of the record.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 16
r3 = 0
call 131
if r0 == 0 goto out
r1 = r0
r1 += 8
r2 = 0
call 132                 ; error: helper-arg
out:
r0 = 0
exit
