#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""How many blocks of a launch each SM ran (probe: examples/probes/blocks_per_sm.bpf.c).

    python3 examples/blocks_per_sm/blocks_per_sm.py APP INJECTED.ptx
"""
import os
import sys

import numpy as np
import cupy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from apps import App  # noqa: E402
from bpf2ptx_host import Maps, print_losses  # noqa: E402


def main():
    app = App(sys.argv[1])
    mod, kern = app.load(sys.argv[2])
    maps = Maps(mod)
    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    print(app.describe())
    print(f"map sm_blocks: {maps.info('sm_blocks')}")
    maps.zero("sm_blocks")
    app.launch(kern)
    cupy.cuda.Device(0).synchronize()
    print(f"result correct: {app.check()}")
    n = maps.counts("sm_blocks")
    used = np.nonzero(n)[0]
    print(f"blocks counted: {int(n.sum())} (launched {app.blocks}); SMs used: {len(used)} of {sms}")
    print(f"blocks per SM: min {int(n[used].min())}, max {int(n[used].max())}, "
          f"mean {n[used].mean():.1f}, std {n[used].std():.1f}")
    print("per SM (smid: blocks):")
    for row in range(0, len(used), 8):
        print("  " + "  ".join(f"{s:3d}:{int(n[s]):5d}" for s in used[row:row + 8]))

    print_losses(maps, sys.argv[2])

if __name__ == "__main__":
    main()
