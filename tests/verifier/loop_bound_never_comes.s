# infinite-loop: the counter is "moved" by 0, so the state at the loop head repeats.
# complexity: 20000
r1 = 0
loop:
r1 += 0                  ; error: infinite-loop
if r1 < 10 goto loop
r0 = 0
exit
