# SPDX-License-Identifier: MIT OR Apache-2.0
"""The two example applications (examples/apps) for CuPy host programs:
load a PTX file (native or injected), launch it, check the result."""
import os
import re

import numpy as np
import cupy

APPS = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))


def entry_name(ptx_path):
    text = open(ptx_path).read()
    return re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(", text)[0]


class App:
    """vecadd: n = 2^24 floats, 256 threads/block. matmul: n x n, 16 x 16 tiles."""

    def __init__(self, name, n=None):
        self.name = name
        rs = cupy.random.RandomState(7)
        if name == "vecadd":
            self.n = n or 1 << 24
            self.a = rs.random_sample(self.n, dtype=cupy.float32)
            self.b = rs.random_sample(self.n, dtype=cupy.float32)
            self.c = cupy.zeros(self.n, dtype=cupy.float32)
            self.grid, self.block = ((self.n + 255) // 256,), (256,)
        elif name == "matmul":
            self.n = n or 4096
            self.a = rs.random_sample((self.n, self.n), dtype=cupy.float32)
            self.b = rs.random_sample((self.n, self.n), dtype=cupy.float32)
            self.c = cupy.zeros((self.n, self.n), dtype=cupy.float32)
            self.grid, self.block = (self.n // 16, self.n // 16), (16, 16)
        else:
            raise ValueError(name)
        self.blocks = int(np.prod(self.grid))
        self.threads = self.blocks * int(np.prod(self.block))
        self.warps = self.threads // 32

    def load(self, ptx_path):
        """Load a module; returns (module, kernel)."""
        mod = cupy.RawModule(path=ptx_path)
        return mod, mod.get_function(entry_name(ptx_path))

    def launch(self, kernel, stream=None):
        kernel(self.grid, self.block, (self.a, self.b, self.c, np.int32(self.n)), stream=stream)

    def check(self):
        """True if c is right (vecadd exactly; matmul within float tolerance of cuBLAS)."""
        if self.name == "vecadd":
            return bool(cupy.array_equal(self.c, self.a + self.b))
        ref = cupy.matmul(self.a, self.b)
        return bool(cupy.allclose(self.c, ref, rtol=1e-4, atol=1e-2))

    def describe(self):
        return (f"{self.name}: grid {self.grid}, block {self.block}: {self.blocks} blocks, "
                f"{self.threads} threads, {self.warps} warps")
