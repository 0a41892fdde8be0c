#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Where the injected "as published" probe's time goes (issue 12, case 3): times vecadd
2^24 native against injected modules given on the command line, each also with
`.maxnreg N` added to the kernel (the same code at a higher occupancy), fresh (map zeroed
before each launch) and accumulating, median of --reps launches, CUDA events:

    python3 benches/gpu-hash/diag_published.py --maxnreg 32,48 A.ptx[:MAP] B.ptx[:MAP] ...

A diagnostic for choosing what to optimise, not a benchmark of record (bench.py is).
"""
import argparse
import os
import re
import sys
import tempfile

import numpy as np
import cupy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hashhost  # noqa: E402

KERNEL = "_Z6vecAddPKfS0_Pfi"


def with_maxnreg(text, n):
    """The module with `.maxnreg n` on the vecadd entry (after its parameter list)."""
    m = re.search(r"\.entry\s+" + re.escape(KERNEL) + r"\s*\(.*?\)\s*", text, re.S)
    return text[: m.end()] + f".maxnreg {n}\n" + text[m.end():]


def timed(fn, reps, before=None):
    e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
    ts = []
    for _ in range(reps):
        if before:
            before()
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ts.append(cupy.cuda.get_elapsed_time(e0, e1))
    return float(np.median(ts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", default=os.path.join(HERE, "..", "..", "examples", "apps", "vecadd.ptx"))
    ap.add_argument("--maxnreg", default="32,48")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("modules", nargs="+", help="PTX[:MAP] (MAP default counts)")
    a = ap.parse_args()
    n = 1 << 24
    x = cupy.ones(n, dtype=cupy.float32)
    c = cupy.zeros(n, dtype=cupy.float32)
    args = (x, x, c, np.int32(n))
    grid, block = (n // 256,), (256,)
    native = cupy.RawModule(path=a.app).get_function(KERNEL)
    rows = []
    for spec in a.modules:
        path, _, mapname = spec.partition(":")
        text = open(path).read()
        for nreg in [None] + [int(v) for v in a.maxnreg.split(",") if v]:
            label = os.path.basename(path) + (f" .maxnreg {nreg}" if nreg else "")
            try:
                tmp = os.path.join(tempfile.gettempdir(), f"diag-{os.getpid()}-{nreg}.ptx")
                with open(tmp, "w") as f:
                    f.write(with_maxnreg(text, nreg) if nreg else text)
                mod = cupy.RawModule(path=tmp)
                fn = mod.get_function(KERNEL)
                table = hashhost.HashMap.from_module(mod, mapname or "counts")
            except Exception as e:  # noqa: BLE001
                rows.append((label, f"not loaded: {e}"))
                continue
            launch = lambda: fn(grid, block, args)  # noqa: E731
            nat = timed(lambda: native(grid, block, args), a.reps)
            fresh = timed(launch, a.reps, before=table.zero)
            table.zero()
            launch()
            acc = timed(launch, a.reps)
            c0 = table.counts()
            rows.append((label, f"regs {fn.num_regs:3d}  native {nat:.4f} ms  fresh {fresh:.4f} ms "
                                f"({fresh / nat:.2f}x)  accumulating {acc:.4f} ms ({acc / nat:.2f}x)  counts {c0}"))
            print(rows[-1][0], rows[-1][1], flush=True)
    print("\n| module | figures |\n|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} |")


if __name__ == "__main__":
    main()
