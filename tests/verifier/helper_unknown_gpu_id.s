# helper-unknown: 599 is past bpftime's GPU helper ids.
call 599                 ; error: helper-unknown
r0 = 0
exit
