# jump-range: a jump whose target lies past the program's last instruction.
r0 = 0
if r1 == 0 goto +2        ; error: jump-range outside the function
exit
