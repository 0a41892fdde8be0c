# ringbuf-leak: gpu_exit ends the thread while it holds a reserved record.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 16
r3 = 0
call 131
if r0 == 0 goto out
call 507                 ; error: ringbuf-leak
out:
r0 = 0
exit
