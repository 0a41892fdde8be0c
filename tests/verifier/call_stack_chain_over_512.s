# stack-size: three frames of 176 bytes each (528 bytes) through a chain of calls.
r1 = 0
*(u64 *)(r10 - 176) = r1
call f
exit
f:
r1 = 0
*(u64 *)(r10 - 176) = r1
call g                   ; error: stack-size 528 bytes
exit
g:
r1 = 0
*(u64 *)(r10 - 176) = r1
r0 = 0
exit
