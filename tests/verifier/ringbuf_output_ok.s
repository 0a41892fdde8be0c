# helper-arg, accepted: ringbuf_output copying a map value into the ringbuf.
.map rb ringbuf 0 0 4096
.map m array 4 16 4
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(1) ll
call 1
if r0 == 0 goto out
r2 = r0
r3 = 16
r4 = 0
r1 = map_idx(0) ll
call 130
out:
r0 = 0
exit
