#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Log2 histogram of how long each warp stays in a kernel, in nanoseconds
(probe: examples/probes/warp_time.bpf.c).

    python3 examples/warp_time/warp_time.py APP INJECTED.ptx
"""
import os
import sys

import cupy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from apps import App  # noqa: E402
from bpf2ptx_host import Maps, print_losses  # noqa: E402


def human(ns):
    for unit, div in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= div:
            return f"{ns / div:g} {unit}"
    return f"{ns} ns"


def main():
    app = App(sys.argv[1])
    mod, kern = app.load(sys.argv[2])
    maps = Maps(mod)
    print(app.describe())
    app.launch(kern)                      # warm-up (module load, clocks)
    cupy.cuda.Device(0).synchronize()
    maps.zero("warp_hist")
    maps.zero("warp_start")
    ev0, ev1 = cupy.cuda.Event(), cupy.cuda.Event()
    ev0.record()
    app.launch(kern)
    ev1.record()
    ev1.synchronize()
    print(f"kernel time (CUDA events): {cupy.cuda.get_elapsed_time(ev0, ev1):.3f} ms; "
          f"result correct: {app.check()}")
    h = maps.counts("warp_hist")
    total = int(h.sum())
    print(f"warps timed: {total} (launched {app.warps})")
    print("warp time (ns)            warps")
    peak = int(h.max()) or 1
    for b in range(64):
        if h[b]:
            lo, hi = (0 if b == 0 else 1 << b), (1 << (b + 1))
            bar = "#" * max(1, int(50 * int(h[b]) / peak))
            print(f"[{human(lo):>8s}, {human(hi):>8s})  {int(h[b]):9d}  {bar}")

    print_losses(maps, sys.argv[2])

if __name__ == "__main__":
    main()
