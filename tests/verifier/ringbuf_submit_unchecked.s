# helper-arg: submitting the reserve result before checking it against NULL.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 16
r3 = 0
call 131
r1 = r0
r2 = 0
call 132                 ; error: helper-arg checked against NULL
r0 = 0
exit
