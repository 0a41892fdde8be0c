# r10-write: moving the frame pointer in place is a write too.
r10 += -8                 ; error: r10-write
r0 = 0
exit
