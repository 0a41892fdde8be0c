# ringbuf-leak: the reservation is dropped unchecked; if it succeeded, it is never released.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 16
r3 = 0
call 131
r0 = 0
exit                     ; error: ringbuf-leak
