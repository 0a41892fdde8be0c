# The key passed to the lookup was never written.
.map counters hash 8 8 16
r2 = r10
r2 += -8
r1 = map_idx(0) ll
call 1                   ; error: stack-uninit
r0 = 0
exit
