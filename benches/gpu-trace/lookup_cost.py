#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Issue 16: is the ~50 us span lookup that misses (latprobe: `t_lookup`, every block of
every launch of examples/trace_latency/latency_app.cu under `bpf2ptx trace`) the code's
cost or trace's? The same probe (benches/gpu-trace/probes/latency_part9.bpf.o, which
times its own lookup with %globaltimer into 1.024 us buckets) is injected with
`bpf2ptx inject --rebind-maps` (trace's lowering) into the app's PTX and launched here
with CuPy, no interposer:

  BIN, iters  the module BIN (each bpf2ptx named in BPF2PTX, colon-separated) made, the
              app's kernel run with ITERS iterations of its arithmetic loop (0: the other
              warps do not compute while the probe waits), 528 or 1 blocks

    BPF2PTX=gpu-carry/bpf2ptx[:OTHER] python3 benches/gpu-trace/lookup_cost.py [LAUNCHES]

Per mode: the t_lookup and t_whole histograms over all launches (bucket: count), and the
table's nonzero words after the runs (the probe never inserts: all should be zero).
Variant 9's key comes from `launch`, here the module's zeroed storage.
"""
import os
import subprocess
import sys
import tempfile

import cupy as cp
import numpy as np

BPF2PTX = os.environ.get("BPF2PTX", "target/release/bpf2ptx")
APP = "examples/trace_latency/latency_app.cu"
PROBE = "benches/gpu-trace/probes/latency_part9.bpf.o"
KERNEL = "_Z4workPfiPy"


def words(ptr, n):
    return cp.ndarray((n,), cp.uint64, memptr=cp.cuda.MemoryPointer(
        cp.cuda.UnownedMemory(ptr, n * 8, None), 0))


def array_sum(mod, name, entries):
    """A (sharded) array map's values, replicas summed (descriptor words 3-5)."""
    w = cp.ndarray((8,), cp.uint64, memptr=mod.get_global(f"bpf2ptx_map_{name}")).get()
    data, replicas, stride = int(w[3]), max(int(w[4]), 1), int(w[5])
    total = np.zeros(entries, np.uint64)
    for r in range(replicas):
        total += words(data + r * stride, entries).get()
    return total


def array_zero(mod, name, entries):
    """Zeroes a (sharded) array map: CuPy keeps one module per path, so each mode's
    histograms start from zero only if cleared."""
    w = cp.ndarray((8,), cp.uint64, memptr=mod.get_global(f"bpf2ptx_map_{name}")).get()
    data, replicas, stride = int(w[3]), max(int(w[4]), 1), int(w[5])
    for r in range(replicas):
        words(data + r * stride, entries)[...] = 0


def hist(v):
    return " ".join(f"{k}:{int(c)}" for k, c in enumerate(v) if c) or "-"


def main():
    launches = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    tmp = tempfile.mkdtemp()
    ptx = os.path.join(tmp, "la.ptx")
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", "--ptx", APP, "-o", ptx], check=True)
    mods = []
    for k, binary in enumerate(BPF2PTX.split(":")):
        inst = os.path.join(tmp, f"la9.{k}.ptx")
        subprocess.run([binary, "inject", "--rebind-maps", PROBE, "--into", ptx, "-o", inst],
                       check=True, stderr=subprocess.DEVNULL)
        mods.append((binary, inst))
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    print(f"GPU: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {launches} "
          f"launches of {KERNEL} per mode, probe {PROBE} injected with --rebind-maps")
    print("| bpf2ptx | iters | grid | t_lookup (bucket us: blocks) | t_whole | nonzero table words |")
    print("|---|---:|---:|---|---|---:|")
    for binary, inst in mods:
        for iters, grid in ((20000, 4 * sms), (0, 4 * sms), (20000, 1)):
            mod = cp.RawModule(path=inst)
            fn = mod.get_function(KERNEL)
            addr = cp.ndarray((2,), cp.uint64, memptr=mod.get_global("bpf2ptx_mapaddr_spans"))
            data_bytes = mod.get_global("bpf2ptx_mapdata_spans").mem.size
            table_ptr = int(addr.get()[0])
            block = 256
            x = cp.zeros(grid * block, cp.float32)
            stamps = cp.zeros(2, cp.uint64)
            for name in ("t_read", "t_lookup", "t_whole"):
                array_zero(mod, name, 64)
            for _ in range(launches):
                stamps[0], stamps[1] = np.uint64(2**64 - 1), np.uint64(0)
                fn((grid,), (block,), (x, np.int32(iters), stamps))
                cp.cuda.Device().synchronize()
            t_lookup = array_sum(mod, "t_lookup", 64)
            t_whole = array_sum(mod, "t_whole", 64)
            nonzero = int(cp.count_nonzero(words(table_ptr, data_bytes // 8)))
            print(f"| {binary} | {iters} | {grid} | {hist(t_lookup)} | {hist(t_whole)} "
                  f"| {nonzero} |")


if __name__ == "__main__":
    main()
