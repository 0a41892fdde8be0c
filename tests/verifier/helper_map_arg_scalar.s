# helper-arg: a number where map_lookup_elem wants a map.
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = 1
call 1                   ; error: helper-arg must be a map
r0 = 0
exit
