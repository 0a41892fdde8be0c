#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""One launch of each named variant, from zeroed maps, for Nsight Compute to measure
(atomics issued, instructions, L2 traffic of the injected module against its twin):

    ncu --clock-control none --kernel-name regex:'vecAdd|insert_any|update_exist|churn' \
        --metrics smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum,\
l1tex__t_requests_pipe_lsu_mem_global_op_red.sum,lts__t_requests.sum,gpu__time_duration.sum \
        python3 benches/gpu-hash/ncu_one.py --build B insert insert_mix churn_warp

Each name is a probe of benches/gpu-hash/probes (its injected module B/vecadd.NAME.ptx)
and its twin kernel in B/twin.cubin (TWIN below); vecadd of N[name] elements.
"""
import argparse
import os
import sys

import numpy as np
import cupy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hashhost  # noqa: E402

# probe -> (twin kernel, hash map name, max_entries, elements, extra u64 arrays of the twin)
TWIN = {
    "insert": ("insert_any", "table", 1 << 22, 1 << 22, 0),
    "insert_mix": ("insert_any_mix", "table", 1 << 22, 1 << 22, 0),
    "published": ("published", "counts", 1024, 1 << 24, 0),
    "overfull_small": ("overfull_hash", "keys", 4096, 1 << 20, 0),
    "overfull_lru": ("overfull_lru", "keys", 4096, 1 << 20, 0),
    "churn_warp": ("churn_warp", "start", 65536, 1 << 20, 2),
    "churn_thread": ("churn_thread", "start", 1 << 21, 1 << 20, 2),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("names", nargs="+")
    a = ap.parse_args()
    twin_mod = cupy.RawModule(path=os.path.join(a.build, "twin.cubin"))
    for name in a.names:
        kernel, mapname, max_e, n, arrays = TWIN[name]
        x = cupy.ones(n, dtype=cupy.float32)
        c = cupy.zeros(n, dtype=cupy.float32)
        base = (x, x, c, np.int32(n))
        grid, block = (n // 256,), (256,)
        mod = cupy.RawModule(path=os.path.join(a.build, f"vecadd.{name}.ptx"))
        table = hashhost.HashMap.from_module(mod, mapname)
        table.zero()
        mod.get_function("_Z6vecAddPKfS0_Pfi")(grid, block, base)
        cupy.cuda.Device().synchronize()
        print(f"{name}: injected {table.counts()}", flush=True)
        t = hashhost.HashMap.alloc(max_e, 9 if name.endswith("lru") else 1)
        extra = tuple(cupy.zeros(256 * 64, dtype=cupy.uint64) for _ in range(arrays))
        twin_mod.get_function(kernel)(grid, block, base + t.twin_args() + extra)
        cupy.cuda.Device().synchronize()
        print(f"{name}: twin {kernel} {t.counts()}", flush=True)


if __name__ == "__main__":
    main()
