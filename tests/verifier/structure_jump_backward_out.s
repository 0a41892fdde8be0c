# jump-range: a backward jump before the first instruction.
r0 = 0
goto -3                   ; error: jump-range
exit
