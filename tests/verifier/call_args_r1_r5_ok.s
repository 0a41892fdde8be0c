# bpf-to-bpf calls, accepted: five arguments, a result, and r6-r9 kept across the call.
r6 = 60
r1 = 1
r2 = 2
r3 = 3
r4 = 4
r5 = 5
call sum
r0 += r6
exit
sum:
r0 = r1
r0 += r2
r0 += r3
r0 += r4
r0 += r5
r6 = 0
exit
