r0 = 1
r0 += 0x1ffffffff
exit
