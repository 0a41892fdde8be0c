#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Hand-edited variants of the injected "as published" probe (issue 12, case 3), each
cutting one part of the probe's path, to see where its time goes (a diagnostic, not a
benchmark of record). Input: `bpf2ptx inject benches/gpu-hash/probes/published.bpf.o
--into examples/apps/vecadd.ptx` (the edits match that output's text at the commit the
results name); output: one .ptx per variant in OUT_DIR. Time them with time.py here.

    python3 benches/gpu-hash/variants/make.py INJECTED.ptx OUT_DIR

base: unchanged; id1d: the thread id from x only; regkey: the key kept in a register;
nofull: no count of refused inserts; lookuponly: the update never called; idonly: the
probe computes the key and stops; empty: the probe returns at once; hoist: descriptor
loads hoisted; *_r32: with `.maxnreg 32`; relaxed*: count reads with ld.relaxed.gpu.
"""
full=open(sys.argv[1]).read(); out=sys.argv[2]
k=full.index(".visible .entry _Z6vecAdd"); head,src=full[:k],full[k:]
def w(name,t): open(f"{out}/{name}.ptx","w").write(head+t)
def cut(t,a,b):
    i=t.index(a); j=t.index(b)+len(b); return t[:i]+t[j:]
def rep(t,a,b,n=-1):
    assert a in t,(a); return t.replace(a,b,n)
w("base",src)
w("id1d",cut(src,"mov.u32 %w0, %ntid.y;","@%p3 bra $Lx1;"))
t=rep(src,"st.local.u32 [bpf_stack+12], %r0;","st.local.u32 [bpf_stack+12], %r0;\n\t\tand.b64 %keyc, %r0, 0xffffffff;",1)
t=rep(t,"mov.u64 %r10, bpf_stack;",".reg .b64 %keyc;\n\t\tmov.u64 %r10, bpf_stack;",1)
t=rep(t,"ld.local.u32 %hkw, [bpf_stack+12];","mov.u64 %hkw, %keyc;")
w("regkey",t)
w("id1d_regkey",cut(t,"mov.u32 %w0, %ntid.y;","@%p3 bra $Lx1;"))
w("nofull",rep(src,"@%hr0 red.relaxed.gpu.global.add.u64 [%hf2+128], %hf1;",""))
w("lookuponly",rep(src,"@%p0 bra $L11;","@%p0 bra $L21;"))
w("idonly",rep(src,"st.local.u32 [bpf_stack+12], %r0;","st.local.u32 [bpf_stack+12], %r0;\n\t\tbra $L21;",1))
w("empty",rep(src,"mov.u64 %r10, bpf_stack;","bra $L__bpf2ptx_end;\n\t\tmov.u64 %r10, bpf_stack;",1))
import re
def maxnreg(t,nr):
    m=re.search(r"\.entry\s+_Z6vecAddPKfS0_Pfi\s*\(.*?\)\s*", t, re.S)
    return t[:m.end()]+f".maxnreg {nr}\n"+t[m.end():]
h=rep(src,"\t\tmov.u64 %r0, 0;\n\t\tsetp.ne.u32 %hm_v, 0, 0;\n\t\tsetp.eq.u64 %hq0, %hk2, 0;","\t\tld.global.b64 %hk1, [%hk8+40];\n\t\tmov.u64 %r0, 0;\n\t\tsetp.ne.u32 %hm_v, 0, 0;\n\t\tsetp.eq.u64 %hq0, %hk2, 0;",1)
h=rep(h,"\t\tsetp.ne.u32 %hq2, 0, 0;\n\t\tld.global.b64 %hk1, [%hk8+40];","\t\tsetp.ne.u32 %hq2, 0, 0;",1)
w("hoist",h)
w("base_r32",maxnreg(src,32))
w("hoist_r32",maxnreg(h,32))
w("lookuponly_r32",maxnreg(src.replace("@%p0 bra $L11;","@%p0 bra $L21;"),32))
# diagnostics of the fresh crowd: count read from L2 instead of L1 (inline lookup), and in the update's first round
rc=rep(src,"\t\tld.global.u64 %hk1, [%hk1];","\t\tld.relaxed.gpu.global.u64 %hk1, [%hk1];",1)
w("relaxedcount",rc)
hu=head.replace("\t@%p8 ld.b64 %rd22, [%rd13];","\t@%p8 ld.relaxed.gpu.b64 %rd22, [%rd13];")
assert hu!=head
open(f"{out}/relaxed_both.ptx","w").write(hu+rc)
open(f"{out}/upd_relaxed.ptx","w").write(hu+src)
