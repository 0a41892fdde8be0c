# uninit-register, accepted neighbour: r6-r9 survive a helper call.
r6 = 7
call 5
r0 = r6
exit
