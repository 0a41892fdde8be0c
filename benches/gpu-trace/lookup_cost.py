#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Issue 16: is the ~50 us span lookup that misses (latprobe: `t_lookup`, every block of
every launch of examples/trace_latency/latency_app.cu under `bpf2ptx trace`) the code's
cost or trace's? The same probe (benches/gpu-trace/probes/latency_part9.bpf.o, which
times its own lookup with %globaltimer into 1.024 us buckets) is injected with
`bpf2ptx inject --rebind-maps` (trace's lowering) into the app's PTX and launched here
with CuPy, no interposer:

  module     the spans table is the module's own storage (its address words as written)
  rebound    the address words point at a fresh zeroed cudaMalloc'd table, as trace binds
  1 block    `module` with one block per launch (no other block contends)

    BPF2PTX=gpu-carry/bpf2ptx python3 benches/gpu-trace/lookup_cost.py [LAUNCHES]

Per mode: the t_lookup and t_whole histograms over all launches (bucket: count), and the
table's nonzero words after the runs (the probe never inserts: all should be zero).
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


def hist(v):
    return " ".join(f"{k}:{int(c)}" for k, c in enumerate(v) if c) or "-"


def main():
    launches = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    tmp = tempfile.mkdtemp()
    ptx, inst = os.path.join(tmp, "la.ptx"), os.path.join(tmp, "la9.ptx")
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", "--ptx", APP, "-o", ptx], check=True)
    subprocess.run([BPF2PTX, "inject", "--rebind-maps", PROBE, "--into", ptx, "-o", inst],
                   check=True, stderr=subprocess.DEVNULL)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    print(f"GPU: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {launches} "
          f"launches of {KERNEL} per mode, probe {PROBE} injected with --rebind-maps")
    print("| mode | grid | t_lookup (bucket us: blocks) | t_whole | nonzero table words |")
    print("|---|---:|---|---|---:|")
    for mode in ("module", "rebound", "1 block"):
        mod = cp.RawModule(path=inst)
        fn = mod.get_function(KERNEL)
        addr = cp.ndarray((2,), cp.uint64, memptr=mod.get_global("bpf2ptx_mapaddr_spans"))
        data_bytes = mod.get_global("bpf2ptx_mapdata_spans").mem.size
        cnt_bytes = mod.get_global("bpf2ptx_mapcnt_spans").mem.size
        keep = []
        if mode == "rebound":
            table = cp.zeros(data_bytes, cp.uint8)
            counts = cp.zeros(cnt_bytes, cp.uint8)
            keep = [table, counts]
            addr[0] = table.data.ptr
            addr[1] = counts.data.ptr
            cp.cuda.Device().synchronize()
        table_ptr = int(addr.get()[0])
        grid = 1 if mode == "1 block" else 4 * sms
        block = 256
        x = cp.zeros(grid * block, cp.float32)
        stamps = cp.zeros(2, cp.uint64)
        for _ in range(launches):
            stamps[0], stamps[1] = np.uint64(~0 & (2**64 - 1)), np.uint64(0)
            fn((grid,), (block,), (x, np.int32(20000), stamps))
            cp.cuda.Device().synchronize()
        t_lookup = array_sum(mod, "t_lookup", 64)
        t_whole = array_sum(mod, "t_whole", 64)
        nonzero = int(cp.count_nonzero(words(table_ptr, data_bytes // 8)))
        print(f"| {mode} | {grid} | {hist(t_lookup)} | {hist(t_whole)} | {nonzero} |")
        del keep


if __name__ == "__main__":
    main()
