# The loop bound comes from a map value the program cannot know.
# complexity: 20000
.map cfg array 4 8 1
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r6 = *(u64 *)(r0 + 0)
r1 = 0
loop:
r1 += 1
if r1 < r6 goto loop     ; error: loop-bound
out:
r0 = 0
exit
