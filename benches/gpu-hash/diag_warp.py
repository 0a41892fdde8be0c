#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Diagnostic of churn per warp: how many lanes each per-warp probe run stands for at
entry and at exit (popcount of get_active_mask), for probes/diag_warp.bpf.c (entry
updates the hash, as churn_warp) and probes/diag_noop.bpf.c (entry only counts), one
launch of vecadd 2^20 each. A warp that reaches the exit whole adds 1 to lanes_out[32].

    python3 benches/gpu-hash/diag_warp.py B      (B: run.sh's build folder)
"""
import os
import subprocess
import sys

import numpy as np
import cupy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "examples", "lib"))
from bpf2ptx_host import Maps  # noqa: E402

B = sys.argv[1] if len(sys.argv) > 1 else "/tmp/bpf2ptx-gpu-hash"
BPF2PTX = os.environ.get("BPF2PTX", os.path.join(ROOT, "target", "release", "bpf2ptx"))
N = 1 << 20
for name in ("diag_warp", "diag_noop"):
    out = os.path.join(B, f"vecadd.{name}.ptx")
    subprocess.run([BPF2PTX, "inject", os.path.join(HERE, "probes", name + ".bpf.o"), "--into",
                    os.path.join(ROOT, "examples", "apps", "vecadd.ptx"), "-o", out], check=True)
    mod = cupy.RawModule(path=out)
    maps = Maps(mod)
    x = cupy.ones(N, dtype=cupy.float32)
    c = cupy.zeros(N, dtype=cupy.float32)
    mod.get_function("_Z6vecAddPKfS0_Pfi")((N // 256,), (256,), (x, x, c, np.int32(N)))
    cupy.cuda.Device().synchronize()
    for m in ("lanes_in", "lanes_out"):
        v = maps.counts(m)
        print(f"{name} {m}: " + ", ".join(f"[{i}]={int(v[i])}" for i in np.nonzero(v)[0]))
    if name == "diag_warp":
        print(f"{name} missed: {int(maps.counts('missed').sum())} (warps {N // 32})")
