# uninit-register: writing into the record after submitting it.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 16
r3 = 0
call 131
if r0 == 0 goto out
r6 = r0
r1 = r0
r2 = 0
call 132
*(u64 *)(r6 + 0) = 1     ; error: uninit-register
out:
r0 = 0
exit
