# uninit-register: exit reads r0, which nothing wrote.
r1 = 0
exit                      ; error: uninit-register r0
