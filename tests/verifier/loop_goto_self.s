# infinite-loop: a jump to itself.
r0 = 0
loop:
goto loop                ; error: infinite-loop
