# pointer-arith, accepted: a pointer known valid compared with NULL (inlined code re-checks
# pointers); both ways are explored.
r1 = r10
r0 = 0
if r1 == 0 goto out
r0 = 1
out:
exit
