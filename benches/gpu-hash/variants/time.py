#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Times vecadd 2^24 native (examples/apps/vecadd.ptx) against the variants make.py
wrote, interleaved, CUDA events, median of R rounds (default 40): `fresh` = the launch
right after zeroing the map (after a synchronize: about 10% above a pipelined launch even
for the empty probe), `acc` = a launch into the map left full by earlier launches.

    R=30 python3 benches/gpu-hash/variants/time.py OUT_DIR/*.ptx
"""
import sys, os, glob, numpy as np, cupy
sys.path.insert(0, "benches/gpu-hash")
import hashhost
K="_Z6vecAddPKfS0_Pfi"; n=1<<24
x=cupy.ones(n,dtype=cupy.float32); c=cupy.zeros(n,dtype=cupy.float32); args=(x,x,c,np.int32(n))
g,b=(n//256,),(256,)
mods={}
nat=cupy.RawModule(path="examples/apps/vecadd.ptx").get_function(K)
for p in sys.argv[1:]:
    m=cupy.RawModule(path=p); f=m.get_function(K); t=hashhost.HashMap.from_module(m,"counts")
    mods[os.path.basename(p)[:-4]]=(f,t)
e0,e1=cupy.cuda.Event(),cupy.cuda.Event()
def tm(fn):
    e0.record(); fn(); e1.record(); e1.synchronize(); return cupy.cuda.get_elapsed_time(e0,e1)
res={k:{"fresh":[],"acc":[]} for k in mods}; res["native"]={"fresh":[],"acc":[]}
for k,(f,t) in mods.items(): t.zero(); f(g,b,args)
cupy.cuda.runtime.deviceSynchronize()
R=int(os.environ.get("R","40"))
for r in range(R):
    for _ in range(3): nat(g,b,args)
    res["native"]["fresh"].append(tm(lambda: nat(g,b,args)))
    for k,(f,t) in mods.items():
        res[k]["acc"].append(tm(lambda: f(g,b,args)))
        t.zero(); cupy.cuda.runtime.deviceSynchronize()
        res[k]["fresh"].append(tm(lambda: f(g,b,args)))
        f(g,b,args)  # refill so acc stays in steady state
    res["native"]["acc"].append(tm(lambda: nat(g,b,args)))
nf=np.median(res["native"]["fresh"]); na=np.median(res["native"]["acc"])
print(f"native fresh-slot {nf:.4f} ms, acc-slot {na:.4f} ms, regs {nat.num_regs}")
for k,(f,t) in mods.items():
    fr=np.median(res[k]["fresh"]); ac=np.median(res[k]["acc"])
    print(f"{k:14s} regs {f.num_regs:3d} fresh {fr:.4f} ({fr/nf:.3f}x) p25-p75 {np.percentile(res[k]['fresh'],25)/nf:.3f}-{np.percentile(res[k]['fresh'],75)/nf:.3f}  acc {ac:.4f} ({ac/na:.3f}x)  counts {t.counts()}")
