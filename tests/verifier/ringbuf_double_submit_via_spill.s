# ringbuf-leak family (soundness regression): after a submit, a copy of the record pointer
# spilled to the stack must not come back: filling it is a read of dead stack, so neither
# a write into the submitted record nor a second submit gets through.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 8
r3 = 0
call 131
if r0 == 0 goto out
*(u64 *)(r10 - 8) = r0
r1 = r0
r2 = 0
call 132
r1 = *(u64 *)(r10 - 8)   ; error: stack-uninit
r2 = 0
*(u64 *)(r1 + 0) = r2
call 132
out:
r0 = 0
exit
