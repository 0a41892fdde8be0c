# pointer-leak: storing a map value pointer into a ringbuf record the host will read.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 8
r3 = 0
call 131
if r0 == 0 goto out
*(u64 *)(r0 + 0) = r10   ; error: pointer-leak
r1 = r0
r2 = 0
call 132
out:
r0 = 0
exit
