# atomic-region: an atomic on a ringbuf record (records are plain output memory).
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 8
r3 = 0
call 131
if r0 == 0 goto out
*(u64 *)(r0 + 0) = 0
r1 = 1
lock *(u64 *)(r0 + 0) += r1    ; error: atomic-region
r1 = r0
r2 = 0
call 132
out:
r0 = 0
exit
