#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""How long after the host's launch call each block of a kernel starts
(probe: examples/probes/launch_latency.bpf.c).

The probe's `launch` map is injected with `--map launch=host` and bound to
pinned host memory here (descriptor word 3, specs/abi.md), so the host stores its launch time with one CPU store right
before the launch call; the time is converted to the GPU's %globaltimer clock
with an offset measured first (examples/lib/gpuclock.py).

    python3 examples/launch_latency/launch_latency.py APP INJECTED.ptx [LAUNCHES]
"""
import os
import sys
import time

import numpy as np
import cupy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from apps import App  # noqa: E402
from bpf2ptx_host import Maps, print_losses  # noqa: E402
import gpuclock  # noqa: E402


def main():
    app = App(sys.argv[1])
    launches = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    mod, kern = app.load(sys.argv[2])
    maps = Maps(mod)
    print(app.describe())
    offset, spread = gpuclock.calibrate()
    print(f"clock offset (globaltimer - time.time_ns()): {offset} ns, read spread {spread} ns")
    mem, host = gpuclock.pinned_u64(1)
    maps.set_word("launch", 3, mem.ptr)          # launch[0] now lives in host memory
    print(f"map launch: {maps.info('launch')}")
    app.launch(kern)                              # warm-up: module load, first-launch costs
    cupy.cuda.Device(0).synchronize()
    for i in range(launches):
        maps.zero("block_lat")
        cupy.cuda.Device(0).synchronize()
        host[0] = time.time_ns() + offset         # the launch time, on the GPU's clock
        app.launch(kern)
        cupy.cuda.Device(0).synchronize()
        lat = maps.counts("block_lat")[: app.blocks].astype(np.int64)
        print(f"launch {i}: first block {lat.min() / 1e3:8.1f} us, median {np.median(lat) / 1e3:8.1f} us, "
              f"last block {lat.max() / 1e3:8.1f} us after the launch call")
    print(f"result correct: {app.check()}")
    # Distribution of the last launch: blocks starting in each 10% of the span.
    lo, hi = int(lat.min()), int(lat.max())
    edges = np.linspace(lo, hi, 11)
    counts, _ = np.histogram(lat, bins=edges)
    print("block start after launch call (last launch)     blocks")
    for j in range(10):
        bar = "#" * max(0, int(40 * counts[j] / max(1, counts.max())))
        print(f"  [{edges[j] / 1e3:8.1f} us, {edges[j + 1] / 1e3:8.1f} us)  {counts[j]:7d}  {bar}")
    order = np.argsort(lat, kind="stable")
    print(f"first 8 blocks to start: {order[:8].tolist()}; last 4: {order[-4:].tolist()}")

    print_losses(maps, sys.argv[2])

if __name__ == "__main__":
    main()
