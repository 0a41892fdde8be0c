#!/usr/bin/env python3
"""Issue 15, "Must hold" point 1 on the GPU: every probe of tests/probes/bpftime (written
in the style of bpftime's published GPU examples) injected into a vector add, run, and
the kernel's output compared with the uninstrumented kernel's.

The app is nvcc's PTX of tests/inject/src/vecadd.cu, built on the GPU machine
(checks.vector_add_ptx), with the kernel renamed to bpftime's `_Z9vectorAddPKfS0_Pf`, as
tests/probes/bpftime/baseline.sh does. Each probe is injected with `bpf2ptx inject`, the
module loaded as it is (device placement needs no host setup; host-placed rings and
arrays work unbound, specs/abi.md "Placement"), per-thread arrays (1502, 1512; word 0 of
the descriptor) bound to storage sized from the launch, as a loader does (specs/abi.md,
"Storage layouts"), then the kernel launched twice on random inputs.

Checks per probe: the launch completes, `c == a + b` bit for bit, and the probe ran: some
map storage, ring counter or printk record changed from zero (the counts are printed).
The GEMM probes are in tests/gpu/loops_gemm.py, which also checks their results.

    BPF2PTX=gpu-carry/bpf2ptx python3 tests/gpu/bpftime_probes.py [OUT.md]
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Table, vector_add_ptx  # noqa: E402

BPF2PTX = os.environ.get("BPF2PTX", "target/release/bpf2ptx")
PROBES = "tests/probes/bpftime"
KERNEL = "_Z9vectorAddPKfS0_Pf"
N, BLOCK = 1 << 20, 256
PER_THREAD = {1502}  # layout ids of per-thread arrays (1512 has 1502's layout)
OPTS = {"gemm_budget": ["--loop-budget", "4096"]}


def maps_of(ptx):
    """The module's map descriptors, and its storage symbols with their sizes in bytes
    (from the PTX declarations: CuPy reports 0 bytes for a module global)."""
    text = open(ptx).read()
    descs = sorted(set(re.findall(r"\.global \.align 8 \.u64 (bpf2ptx_map_\w+)\[8\]", text)))
    data = {}
    for ty, name, n in re.findall(
            r"\.global \.align \d+ \.(b8|u64) (bpf2ptx_(?:mapdata|mapctr|mapcnt)_\w+|bpf2ptx_printk_ctr)\[(\d+)\]",
            text):
        data[name] = int(n) * (8 if ty == "u64" else 1)
    return descs, data


def nonzero_bytes(module, sym, size):
    g = module.get_global(sym)
    return int(cp.count_nonzero(cp.ndarray((size,), cp.uint8, g)))


def run_probe(t, tmp, app, obj):
    name = os.path.basename(obj)[: -len(".bpf.o")]
    out = os.path.join(tmp, f"{name}.ptx")
    r = subprocess.run([BPF2PTX, "inject", *OPTS.get(name, []), obj, "--into", app, "-o", out],
                       capture_output=True, text=True)
    t.check(name, "inject exit code", r.returncode, 0)
    if r.returncode != 0:
        print(r.stderr)
        return
    module = cp.RawModule(path=out)
    descs, data = maps_of(out)
    bound = []
    for d in descs:
        desc = cp.ndarray((8,), cp.uint64, module.get_global(d))
        words = desc.get()
        if int(words[0]) & 0xFFFFFFFF in PER_THREAD:
            entries, stride = int(words[2]) & 0xFFFFFFFF, int(words[2]) >> 32
            buf = cp.zeros(entries * N * stride, cp.uint8)
            bound.append((d, buf))
            words[3], words[4] = buf.data.ptr, N
            desc.set(words)
    a = cp.random.rand(N, dtype=cp.float32)
    b = cp.random.rand(N, dtype=cp.float32)
    c = cp.zeros(N, cp.float32)
    f = module.get_function(KERNEL)
    for _ in range(2):
        f((N // BLOCK,), (BLOCK,), (a, b, c, np.int32(N)))
    cp.cuda.runtime.deviceSynchronize()
    t.check(name, "output c == a + b (differing elements)", int(cp.count_nonzero(c != a + b)), 0)
    changed = {s: nonzero_bytes(module, s, n) for s, n in data.items()}
    changed.update({d + " (bound)": int(cp.count_nonzero(buf)) for d, buf in bound})
    print(f"  {name}: nonzero bytes {changed}")
    t.check(name, "probe wrote some map, ring or printk record", any(v > 0 for v in changed.values()), True)


def main():
    t = Table("probe")
    objs = sorted(o for o in glob.glob(f"{PROBES}/*.bpf.o") if "/gemm_" not in o)
    with tempfile.TemporaryDirectory() as tmp:
        app = vector_add_ptx(tmp, KERNEL)
        for obj in objs:
            run_probe(t, tmp, app, obj)
    t.finish()


if __name__ == "__main__":
    main()
