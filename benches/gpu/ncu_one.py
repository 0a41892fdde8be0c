#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Launch one kernel of a module a few times, for ncu:
    ncu --clock-control none -k regex:NAME ... python3 benches/gpu/ncu_one.py APP MODULE KERNEL [twin]
MODULE: a PTX/cubin file; KERNEL: its entry name; `twin` passes the two map
buffers the twins take."""
import os
import sys

import numpy as np
import cupy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "lib"))
from apps import App  # noqa: E402

app = App(sys.argv[1])
mod = cupy.RawModule(path=sys.argv[2])
k = mod.get_function(sys.argv[3])
extra = ()
if len(sys.argv) > 4:
    extra = (cupy.zeros(1 << 20, dtype=cupy.uint64), cupy.zeros(1 << 15, dtype=cupy.uint64))
for _ in range(3):
    k(app.grid, app.block, (app.a, app.b, app.c, np.int32(app.n)) + extra)
cupy.cuda.Device(0).synchronize()
