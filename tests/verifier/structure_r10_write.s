# r10-write: the frame pointer is read-only.
r10 = 0                   ; error: r10-write
r0 = 0
exit
