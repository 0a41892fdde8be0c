#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""A kernel's memory accesses by state space, load/store and size
(probe: examples/probes/mem_hist.bpf.c, attached to every ld/st/atom/red).

    python3 examples/mem_hist/mem_hist.py APP INJECTED.ptx
"""
import os
import sys

import cupy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from apps import App  # noqa: E402
from bpf2ptx_host import Maps, print_losses  # noqa: E402

SPACES = ["generic", "global", "shared", "local"]
KINDS = {1: "load", 2: "store", 3: "atomic"}


def main():
    app = App(sys.argv[1])
    mod, kern = app.load(sys.argv[2])
    maps = Maps(mod)
    print(app.describe())
    maps.zero("mem_hist")
    ev0, ev1 = cupy.cuda.Event(), cupy.cuda.Event()
    ev0.record()
    app.launch(kern)
    ev1.record()
    ev1.synchronize()
    print(f"kernel time (CUDA events, first launch): {cupy.cuda.get_elapsed_time(ev0, ev1):.3f} ms; "
          f"result correct: {app.check()}")
    h = maps.counts("mem_hist")
    print(f"{'space':8s} {'kind':7s} {'size':>5s} {'accesses':>14s} {'per thread':>11s} {'bytes':>16s}")
    total = 0
    for k in range(128):
        if h[k]:
            space, kind, size = k >> 5, (k >> 3) & 3, 1 << (k & 7)
            n = int(h[k])
            total += n
            print(f"{SPACES[space]:8s} {KINDS.get(kind, str(kind)):7s} {size:5d} {n:14d} "
                  f"{n / app.threads:11.2f} {n * size:16d}")
    print(f"total accesses: {total} ({total / app.threads:.2f} per thread)")

    print_losses(maps, sys.argv[2])

if __name__ == "__main__":
    main()
