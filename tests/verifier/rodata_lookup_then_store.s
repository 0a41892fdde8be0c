# rodata-write: a value looked up in a read-only map is read-only too.
.map ro array 4 8 1 0x80
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
*(u64 *)(r0 + 0) = 1     ; error: rodata-write
out:
r0 = 0
exit
