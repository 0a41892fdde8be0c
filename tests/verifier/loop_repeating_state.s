# infinite-loop: the loop body changes nothing the exit test reads.
r0 = 0
r1 = 0
loop:
r0 = 1                   ; error: infinite-loop
if r1 == 0 goto loop
exit
