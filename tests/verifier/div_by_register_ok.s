# Division by a register that may be zero is defined (BPF: x / 0 = 0, x % 0 = x), so it
# is accepted; the backend gets the fact that a zero check is needed.
call 5
r6 = r0
call 5
r1 = 100
r1 /= r6
r2 = 100
r2 %= r0
w3 = 7
w3 /= w6
r0 = r1
r0 += r2
exit
