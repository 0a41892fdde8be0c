# pointer-leak: a function's address (for bpf_loop's callback) is a pointer: returning it
# would leak it.
r0 = func(cb) ll
exit                     ; error: pointer-leak
cb:
r0 = 0
exit
