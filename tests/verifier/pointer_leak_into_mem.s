# pointer-leak: storing a pointer into the input memory.
# entry: mem 8
*(u64 *)(r1 + 0) = r10   ; error: pointer-leak
r0 = 0
exit
