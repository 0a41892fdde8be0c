# uninit-register, accepted neighbour: a conformance-style entry passes the length in r2.
# entry: mem 16
r0 = r2
exit
