# uninit-register: after the submit the copy in r6 is dead, so a second submit through it
# is rejected.
.map rb ringbuf 0 0 4096
r1 = map_idx(0) ll
r2 = 16
r3 = 0
call 131
if r0 == 0 goto out
r6 = r0
r1 = r0
r2 = 0
call 132
r1 = r6                  ; error: uninit-register
r2 = 0
call 132
out:
r0 = 0
exit
