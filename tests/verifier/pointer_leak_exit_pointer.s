# pointer-leak: the program returns the frame pointer.
r0 = r10
exit                     ; error: pointer-leak returns a pointer
