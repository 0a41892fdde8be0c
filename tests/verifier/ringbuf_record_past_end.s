# mem-bounds: a u64 at offset 12 of a 16-byte record.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 16
r3 = 0
call 131
if r0 == 0 goto out
*(u64 *)(r0 + 12) = 1    ; error: mem-bounds the ringbuf record (16 bytes)
r1 = r0
r2 = 0
call 132
out:
r0 = 0
exit
