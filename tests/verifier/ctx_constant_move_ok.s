# ctx-access, accepted: moving the context pointer by a constant (no access follows).
r1 += 16
r1 += -16
r0 = 0
exit
