# loop-bound: the counter moves away from its bound (it would only end after 2^64 steps).
# complexity: 20000
r1 = 5
loop:
r1 += 1
if r1 > 3 goto loop      ; error: loop-bound
r0 = 0
exit
