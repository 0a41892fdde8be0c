# may_goto, rejected: the counter indexes an 8-byte stack buffer without a bound: after
# enough iterations it is past the buffer.
r1 = 0
*(u64 *)(r10 - 8) = r1
r7 = 0
loop:
may_goto out
r3 = r10
r3 += -8
r3 += r7
r4 = 1
*(u8 *)(r3 + 0) = r4     ; error: mem-bounds
r7 += 1
goto loop
out:
r0 = 0
exit
