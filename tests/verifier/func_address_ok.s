# Accepted: a function's address may be taken (bpf_loop's callback); unused, it is
# harmless.
r1 = func(cb) ll
r0 = 0
exit
cb:
r0 = 0
exit
