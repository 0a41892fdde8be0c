# helper-arg (soundness regression): ringbuf_reserve on an array map.
.map m array 4 8 4
r1 = map_idx(0) ll
r2 = 64
r3 = 0
call 131                 ; error: helper-arg a map of a type this helper takes
if r0 == 0 goto out
r1 = r0
r2 = 0
call 132
out:
r0 = 0
exit
