# helper-unknown: helper 12 (tail_call) is not in the device runtime.
r0 = 0
call 12                  ; error: helper-unknown helper 12
r0 = 0
exit
