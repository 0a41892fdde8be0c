#!/usr/bin/env python3
"""Injection on the GPU: nvcc-built vecadd and tiled matmul, instrumented by
`bpf2ptx inject` with tests/inject/probes/counters.bpf.o (every attach point and
granularity), run beside the uninstrumented kernels: outputs must be identical and every
probe count must equal what a CPU model of the launch predicts. Then vecadd again with
tests/inject/probes/ring_exit.bpf.o, a ring probe at its default placement (record bytes in
host memory), bound by hand as specs/abi.md says, inlined and called: one record per
warp, none lost, each with the 32 lanes its leader stands for.

Run on the GPU machine from the repository root (needs nvcc, CuPy and a bpf2ptx binary):

    BPF2PTX=gpu-carry/bpf2ptx python3 tests/gpu/inject_check.py

The model: per thread one entry and one exit (n = threads, so no thread takes another
path); per warp / per block one each; bytes per state space and direction follow from
the source (vecadd: 8 bytes loaded and 4 stored in global memory per thread; matmul with
TILE 16: per tile step 8 global bytes loaded, 8 shared bytes stored, 128 shared bytes
loaded; 4 global bytes stored at the end). Access counts are exact for vecadd (3 per
thread); for matmul they depend on how nvcc vectorises shared loads, so only bytes are
checked there.
"""
import ctypes
import os
import subprocess
import sys
import tempfile

import cupy as cp
import numpy as np

BPF2PTX = os.environ.get("BPF2PTX", "target/release/bpf2ptx")
SRC = "tests/inject/src"
PROBES = "tests/inject/probes/counters.bpf.o"
SLOTS = 24


def sh(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return r.stderr


def counts(module):
    """The `counts` map, replicas summed (a sharded array has word 4 = replicas)."""
    entries, stride, replicas, step = geometry(module)
    raw = cp.ndarray((replicas * step // 8,), cp.uint64,
                     module.get_global("bpf2ptx_mapdata_counts")).get()
    rows = raw.reshape(replicas, step // 8)[:, : entries * stride // 8]
    per = rows.reshape(replicas, entries, stride // 8)[:, :, 0]
    return per.sum(axis=0), replicas


def geometry(module):
    """max_entries, stride, replicas, bytes per replica (word 5 when sharded)."""
    desc = cp.ndarray((8,), cp.uint64, module.get_global("bpf2ptx_map_counts")).get()
    entries, stride = int(desc[2]) & 0xFFFFFFFF, int(desc[2]) >> 32
    replicas = max(int(desc[4]), 1)
    step = int(desc[5]) if replicas > 1 else entries * stride
    return entries, stride, replicas, step


def zero_counts(module):
    g = module.get_global("bpf2ptx_mapdata_counts")
    _, _, replicas, step = geometry(module)
    cp.ndarray((replicas * step // 8,), cp.uint64, g).fill(0)


def build(tmp, name):
    """Paths of the native and the instrumented PTX (CuPy loads PTX from a .ptx path)."""
    ptx = os.path.join(tmp, f"{name}.ptx")
    sh("nvcc", "-ptx", "-arch=sm_90", "-O3", f"{SRC}/{name}.cu", "-o", ptx)
    out = os.path.join(tmp, f"{name}.inj.ptx")
    notes = sh(BPF2PTX, "inject", PROBES, "--into", ptx, "-o", out)
    return ptx, out, notes


def check(label, got, want, fails):
    ok = int(got) == int(want)
    print(f"  {label:28} {int(got):>16,} {'==' if ok else '!='} model {int(want):,}")
    if not ok:
        fails.append(f"{label}: {got} != {want}")


def run_vecadd(tmp, fails):
    native, inj, _ = build(tmp, "vecadd")
    n = 1 << 24
    block = 256
    grid = n // block
    a = cp.random.rand(n, dtype=cp.float32)
    b = cp.random.rand(n, dtype=cp.float32)
    outs = []
    for path in (native, inj):
        m = cp.RawModule(path=path)
        k = m.get_function("vecadd")
        c = cp.zeros(n, cp.float32)
        if path is inj:
            zero_counts(m)
        k((grid,), (block,), (a, b, c, np.int32(n)))
        cp.cuda.runtime.deviceSynchronize()
        outs.append((c.get(), m))
    same = np.array_equal(outs[0][0], outs[1][0])
    print(f"vecadd n=2^24, {grid} x {block}: output {'identical' if same else 'DIFFERS'} to native")
    if not same:
        fails.append("vecadd output differs")
    got, rep = counts(outs[1][1])
    t = n
    print(f"  (counts map sharded into {rep} replicas)")
    model = {0: t, 1: t, 2: t // 32, 3: grid, 4: t // 32, 5: grid,
             8 + 2 * 1: 8 * t, 8 + 2 * 1 + 1: 4 * t, 18: 3 * t, 19: 0}
    names = {0: "entry/thread", 1: "exit/thread", 2: "entry/warp", 3: "entry/block",
             4: "exit/warp", 5: "exit/block", 10: "global bytes loaded",
             11: "global bytes stored", 18: "memory accesses", 19: "atomic accesses"}
    for s in range(SLOTS):
        check(names.get(s, f"slot {s}"), got[s], model.get(s, 0), fails)


def run_matmul(tmp, fails, n):
    native, inj, _ = build(tmp, "matmul")
    tile = 16
    a = cp.random.rand(n * n, dtype=cp.float32)
    b = cp.random.rand(n * n, dtype=cp.float32)
    grid = (n // tile, n // tile)
    outs = []
    for path in (native, inj):
        m = cp.RawModule(path=path)
        k = m.get_function("matmul")
        c = cp.zeros(n * n, cp.float32)
        if path is inj:
            zero_counts(m)
        k(grid, (tile, tile), (a, b, c, np.int32(n)))
        cp.cuda.runtime.deviceSynchronize()
        outs.append((c.get(), m))
    same = np.array_equal(outs[0][0], outs[1][0])
    print(f"matmul n={n}, {grid[0]}x{grid[1]} x 16x16: output {'identical' if same else 'DIFFERS'} to native")
    if not same:
        fails.append(f"matmul {n} output differs")
    got, _ = counts(outs[1][1])
    t = n * n
    steps = n // tile
    blocks = grid[0] * grid[1]
    model = {0: t, 1: t, 2: t // 32, 3: blocks, 4: t // 32, 5: blocks,
             10: 8 * steps * t, 11: 4 * t, 12: 128 * steps * t, 13: 8 * steps * t, 19: 0}
    names = {0: "entry/thread", 1: "exit/thread", 2: "entry/warp", 3: "entry/block",
             4: "exit/warp", 5: "exit/block", 10: "global bytes loaded",
             11: "global bytes stored", 12: "shared bytes loaded", 13: "shared bytes stored",
             19: "atomic accesses"}
    for s in range(SLOTS):
        if s == 18:
            print(f"  {'memory accesses':28} {int(got[s]):>16,} (vectorisation-dependent)")
            continue
        check(names.get(s, f"slot {s}"), got[s], model.get(s, 0), fails)


RING_PROBE = "tests/inject/probes/ring_exit.bpf.o"


def run_ring(tmp, fails, *mode):
    """vecadd with RING_PROBE injected at the default placement (the ring's bytes in host
    memory): bound as specs/abi.md says, one 16-byte record per warp at exit holding the
    leader's id and the lanes it stands for (all 32: vecadd's lanes leave together). Uses
    the vecadd PTX run_vecadd built in `tmp`; `mode`: extra inject options (`--call`)."""
    ptx = os.path.join(tmp, "vecadd.ptx")
    out = os.path.join(tmp, "vecadd.ring.ptx")
    sh(BPF2PTX, "inject", RING_PROBE, "--into", ptx, "-o", out, *mode)
    n, block = 1 << 24, 256
    grid = n // block
    how = " ".join(mode) or "inlined"
    print(f"vecadd + ring probe ({how}, default placement: host), {grid} x {block}:")
    check("record stores at .sys scope", "st.release.sys.global" in open(out).read(), True, fails)
    a = cp.random.rand(n, dtype=cp.float32)
    b = cp.random.rand(n, dtype=cp.float32)
    m = cp.RawModule(path=out)
    desc = cp.ndarray((8,), cp.uint64, m.get_global("bpf2ptx_map_events"))
    ctr = cp.ndarray((2,), cp.uint64, m.get_global("bpf2ptx_mapctr_events"))
    size = int(desc[4])
    # Host placement: the record bytes in mapped pinned memory (word 3); counters, drops
    # (word 6) and the bound (word 7: the producer plus claims in flight) stay in device
    # memory.
    hptr = cp.cuda.runtime.hostAlloc(size, 2)  # cudaHostAllocMapped
    try:
        buf = np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(hptr))
        buf[:] = 0
        desc[3] = hptr  # UVA: the host pointer is the device pointer
        ctr.fill(0)
        desc[6:8] = 0  # no drops; the bound at the producer, 0
        c = cp.zeros(n, cp.float32)
        m.get_function("vecadd")((grid,), (block,), (a, b, c, np.int32(n)))
        cp.cuda.runtime.deviceSynchronize()
        same = bool(cp.array_equal(c, a + b))
        prod, cons = (int(x) for x in ctr.get())
        drops, bound = (int(x) for x in desc[6:8].get())
        rec = buf[:prod].view(np.uint64).reshape(-1, 3)
        ids = np.sort(rec[:, 1])
        check("output == a + b", same, True, fails)
        check("producer = 24 x warps", prod, 24 * (n // 32), fails)
        check("drops", drops, 0, fails)
        check("bound = producer (no claim in flight)", bound, prod, fails)
        check("headers {16, 0}", bool(np.all(rec[:, 0] == 16)), True, fails)
        check("leader ids: each warp once", bool(np.array_equal(
            ids, np.arange(0, n, 32, dtype=np.uint64))), True, fails)
        check("second word: 32 lanes", bool(np.all(rec[:, 2] == 0xFFFFFFFF)), True, fails)
        check("consumer untouched", cons, 0, fails)
    finally:
        cp.cuda.runtime.freeHost(hptr)


def main():
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        run_vecadd(tmp, fails)
        run_matmul(tmp, fails, 1024)
        run_ring(tmp, fails)
        run_ring(tmp, fails, "--call")
    if fails:
        print("FAILED:", *fails, sep="\n  ")
        sys.exit(1)
    print("all outputs identical, all counts equal the model")


if __name__ == "__main__":
    main()
