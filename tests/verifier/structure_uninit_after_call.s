# uninit-register: a helper call clobbers r1-r5, so r1 is not readable after it.
r1 = 7
call 5
r0 = r1                   ; error: uninit-register r1
exit
