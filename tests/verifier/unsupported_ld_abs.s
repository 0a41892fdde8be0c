# unsupported: legacy packet access has no GPU meaning.
r6 = r1
r0 = *(u8 *)skb[12]      ; error: unsupported
exit
