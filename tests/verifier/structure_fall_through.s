# fall-through: the last instruction is an ALU op, so control runs off the end.
r0 = 0
r0 += 1                   ; error: fall-through
