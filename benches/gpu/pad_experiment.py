#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Diagnostic for benches/results/inject-overhead.md: the vecadd counters as bpf2ptx
injects them, and the same PTX with one edit -- sharded replicas 128 bytes apart instead of
8 (`mul.wide.u32 %lkd2, %lk1, 8` -> 128, storage 2048 -> 32768 bytes). Same binary
otherwise, so the difference is the replica layout alone.

    python3 benches/gpu/pad_experiment.py BPF2PTX
"""
import os
import re
import subprocess
import sys

import numpy as np
import cupy

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "examples", "lib"))
from apps import App  # noqa: E402

bpf2ptx = sys.argv[1]
app = App("vecadd")
variants = []
nat = cupy.RawModule(path=os.path.join(ROOT, "examples/apps/vecadd.ptx"))
variants.append(("native", nat.get_function("_Z6vecAddPKfS0_Pfi"), None, None))
for probe, mapname, want in (("thread_counter", "thread_count", app.threads), ("warp_counter", "warp_count", app.warps)):
    out = f"/tmp/pad.{probe}.ptx"
    subprocess.run([bpf2ptx, "inject", f"{ROOT}/examples/probes/{probe}.bpf.o", "--into",
                    f"{ROOT}/examples/apps/vecadd.ptx", "-o", out], check=True)
    text = open(out).read()
    padded, n1 = re.subn(r"mul\.wide\.u32 %lkd2, %lk1, 8;", "mul.wide.u32 %lkd2, %lk1, 128;", text)
    padded, n2 = re.subn(rf"bpf2ptx_mapdata_{mapname}\[2048\]", f"bpf2ptx_mapdata_{mapname}[32768]", padded)
    if n1 != 1 or n2 != 1:
        print(f"{probe}: pattern not found ({n1}, {n2}); skipped")
        continue
    open(out.replace(".ptx", ".padded.ptx"), "w").write(padded)
    for label, path in ((f"{probe} inject", out), (f"{probe} inject, replicas padded", out.replace(".ptx", ".padded.ptx"))):
        m = cupy.RawModule(path=path)
        variants.append((label, m.get_function("_Z6vecAddPKfS0_Pfi"), m, (mapname, want)))

ev0, ev1 = cupy.cuda.Event(), cupy.cuda.Event()
times = {v[0]: [] for v in variants}
for label, fn, mod, chk in variants:
    if chk:
        p = mod.get_global("bpf2ptx_mapdata_" + chk[0])
        nbytes = 32768 if "padded" in label else 2048
        st = cupy.ndarray((nbytes // 8,), dtype=cupy.uint64, memptr=p)
        st.fill(0)
        app.launch(fn)
        cupy.cuda.Device(0).synchronize()
        got = int(st.get().sum())
        print(f"[check] {label:40s} count {got} (model {chk[1]}) {'ok' if got == chk[1] else 'MISMATCH'}")
for r in range(55):
    for label, fn, _, _ in variants:
        ev0.record()
        app.launch(fn)
        ev1.record()
        ev1.synchronize()
        if r >= 5:
            times[label].append(cupy.cuda.get_elapsed_time(ev0, ev1))
base = float(np.median(times["native"]))
for label, _, _, _ in variants:
    med = float(np.median(times[label]))
    print(f"[time]  {label:40s} median {med:.4f} ms  {med / base:.3f}x native  (n={len(times[label])})")
