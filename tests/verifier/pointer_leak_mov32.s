# pointer-leak: a 32-bit move of a pointer keeps its low half as a number.
w0 = w10                 ; error: pointer-leak 32-bit move
exit
