# fall-through: a conditional jump as the last instruction can fall past the end.
r0 = 0
top:
exit
if r0 == 0 goto top       ; error: fall-through
