# call-depth: one more level: the ninth frame is rejected at the call that would make it.
call f1
exit
f1:
call f2
exit
f2:
call f3
exit
f3:
call f4
exit
f4:
call f5
exit
f5:
call f6
exit
f6:
call f7
exit
f7:
call f8                  ; error: call-depth exceeds 8 frames
exit
f8:
r0 = 8
exit
