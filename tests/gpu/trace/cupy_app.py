# SPDX-License-Identifier: MIT OR Apache-2.0
"""A CuPy program whose kernel is loaded as PTX (examples/apps/vecadd.ptx, `cupy.RawModule`
reads the file through the driver), for tests/gpu/trace_apps.py: vecAdd launched 3 times
on 2^20 elements, its output checked; the model line on stderr."""
import sys

import cupy as cp
import numpy as np

n, block, launches = 1 << 20, 256, 3
f = cp.RawModule(path="examples/apps/vecadd.ptx").get_function("_Z6vecAddPKfS0_Pfi")
a = cp.arange(n, dtype=cp.float32)
b = cp.full(n, 0.5, dtype=cp.float32)
c = cp.zeros(n, dtype=cp.float32)
for _ in range(launches):
    f((n // block,), (block,), (a, b, c, np.int32(n)))
wrong = int(cp.count_nonzero(c != a + b))
print(f"cupy elements {n} wrong {wrong}")
print(f"model _Z6vecAddPKfS0_Pfi launches {launches} grid {n // block} block {block}", file=sys.stderr)
sys.exit(1 if wrong else 0)
