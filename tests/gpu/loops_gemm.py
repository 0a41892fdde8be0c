#!/usr/bin/env python3
"""Issue 15, "Must hold": each loop form Linux accepts, on the GPU, against a CPU model.

The GEMM probes of tests/probes/bpftime (C = A x B, s32 elements, the trip count K read
from the map gemm_dims, thread t computing C[t]) are injected with `bpf2ptx inject` at the
exit of a vector add (nvcc's PTX of tests/inject/src/vecadd.cu, built on the GPU machine
by checks.vector_add_ptx, with the kernel renamed to bpftime's
`_Z9vectorAddPKfS0_Pf` as tests/probes/bpftime/baseline.sh does), the maps filled from the
host through their module symbols (specs/abi.md), the kernel launched, and C read back:

  case                     loop form                          model
  bpf_loop                 bpf_loop (181) + callback          C = A @ B (numpy, s64 sums to s32)
  bpf_for                  open-coded numeric iterator        C = A @ B
  can_loop                 may_goto (0xe5), budget 2^23       C = A @ B
  budget-large             plain loop, --loop-budget 4096     C = A @ B, loop_budget_exhausted = 0
  budget-small             plain loop, --loop-budget 2        C untouched (0): every run with a
                                                              cell ends at the loop's head;
                                                              loop_budget_exhausted = M * N

and for every case the vector add's own output is unchanged (c = a + b). Each shape runs
with K >= 3 so that a budget of 2 is always spent (the head is reached K or K + 1 times).

Run on the GPU machine from the repository root (needs CuPy, nvcc and a bpf2ptx binary):

    BPF2PTX=gpu-carry/bpf2ptx python3 tests/gpu/loops_gemm.py [OUT.md]

Prints one `PASS`/`FAIL` line per check, then the table summary (tests/gpu/checks.py);
exit 1 when a check fails. `SHAPES="16x16x37,32x32x100"` picks the shapes (M x N x K,
M * N and M * K and K * N at most 4096, the maps' size).
"""
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
CELLS = 4096
BLOCK = 128

# (case, object, extra bpf2ptx options, what the loop budget does: None / "room" / "spent")
CASES = [
    ("bpf_loop", "gemm_bpf_loop.bpf.o", [], None),
    ("bpf_for", "gemm_bpf_for.bpf.o", [], None),
    ("can_loop", "gemm_can_loop.bpf.o", [], None),
    ("budget-large", "gemm_budget.bpf.o", ["--loop-budget", "4096"], "room"),
    ("budget-small", "gemm_budget.bpf.o", ["--loop-budget", "2"], "spent"),
]


def sh(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout + r.stderr


def array_geometry(module, name):
    """max_entries, value stride, replicas and bytes per replica of array map `name`
    (descriptor words 2, 4 and 5: specs/abi.md, "Map descriptor")."""
    desc = cp.ndarray((8,), cp.uint64, module.get_global(f"bpf2ptx_map_{name}")).get()
    entries, stride = int(desc[2]) & 0xFFFFFFFF, int(desc[2]) >> 32
    replicas = max(int(desc[4]), 1)
    step = int(desc[5]) if replicas > 1 else entries * stride
    return entries, stride, replicas, step


def array_words(module, name):
    """The map's storage as a writable uint32 view, per replica: shape (replicas, bytes / 4)."""
    entries, stride, replicas, step = array_geometry(module, name)
    raw = cp.ndarray((replicas * step // 4,), cp.uint32,
                     module.get_global(f"bpf2ptx_mapdata_{name}"))
    return raw.reshape(replicas, step // 4), stride // 4


def fill(module, name, values):
    """Writes `values` (uint32 each, one per key) into every replica of array map `name`;
    the rest of the storage is zeroed."""
    words, per = array_words(module, name)
    host = np.zeros(words.shape, np.uint32)
    flat = np.asarray(values, np.int64).astype(np.uint32).reshape(-1)
    for r in range(words.shape[0]):
        host[r, 0: len(flat) * per: per] = flat
    words.set(host)


def fill_value(module, name, words_of_value):
    """Writes one value of several uint32 words (`gemm_dims`' u32[3]) at key 0 of every
    replica of array map `name`; the rest of the storage is zeroed."""
    words, _ = array_words(module, name)
    host = np.zeros(words.shape, np.uint32)
    flat = np.asarray(words_of_value, np.int64).astype(np.uint32)
    host[:, : len(flat)] = flat
    words.set(host)


def read(module, name, count):
    """Keys 0..count-1 of array map `name` as int32 (replica 0: C is only written by
    map_update_elem, which makes the map unsharded)."""
    words, per = array_words(module, name)
    return words.get()[0, 0: count * per: per].astype(np.uint32).view(np.int32)


def loop_counter(module, program):
    """The program's loop-budget counter (specs/abi.md, "Loop budget counter"), or None
    when the module has none."""
    try:
        g = module.get_global(f"bpf2ptx_loopcnt_{program}")
    except Exception:  # CuPy raises when the symbol does not exist
        return None
    return int(cp.ndarray((1,), cp.uint64, g).get()[0])


def run_case(t, tmp, app, case, obj, extra, budget, m, n, k, rng):
    shape = f"{case} {m}x{n}x{k}"
    # One file per case and shape: CuPy memoises modules by path, so reusing a path would
    # reuse the module (and its counters) of an earlier shape.
    out = os.path.join(tmp, f"{case}-{m}x{n}x{k}.ptx")
    sh(BPF2PTX, "inject", *extra, os.path.join(PROBES, obj), "--into", app, "-o", out)
    module = cp.RawModule(path=out)
    a = rng.integers(-1000, 1000, size=(m, k), dtype=np.int64)
    b = rng.integers(-1000, 1000, size=(k, n), dtype=np.int64)
    fill_value(module, "gemm_dims", [m, n, k])
    fill(module, "gemm_a", a.reshape(-1))
    fill(module, "gemm_b", b.reshape(-1))
    fill(module, "gemm_c", np.zeros(CELLS, np.int64))
    threads = m * n
    grid = (threads + BLOCK - 1) // BLOCK
    total = grid * BLOCK
    va = cp.random.rand(total, dtype=cp.float32)
    vb = cp.random.rand(total, dtype=cp.float32)
    vc = cp.zeros(total, cp.float32)
    module.get_function(KERNEL)((grid,), (BLOCK,), (va, vb, vc, np.int32(total)))
    cp.cuda.runtime.deviceSynchronize()
    t.check(shape, "vector add output unchanged", bool(cp.array_equal(vc, va + vb)), True)
    got = read(module, "gemm_c", threads)
    model = (a @ b).astype(np.int32).reshape(-1)
    if budget == "spent":
        model = np.zeros(threads, np.int32)
    t.check(shape, "C (mismatching cells)", int(np.count_nonzero(got != model)), 0)
    program = "cuda__gemm_budget"
    counter = loop_counter(module, program)
    if budget is None:
        t.check(shape, "no loop-budget counter", counter, None)
    else:
        want = threads if budget == "spent" else 0
        t.check(shape, "loop_budget_exhausted", counter, want)


def main():
    shapes = os.environ.get("SHAPES", "16x16x37,32x32x100,8x64x3")
    rng = np.random.default_rng(15)
    t = Table()
    with tempfile.TemporaryDirectory() as tmp:
        app = vector_add_ptx(tmp, KERNEL)
        for s in shapes.split(","):
            m, n, k = (int(x) for x in s.lower().split("x"))
            if max(m * n, m * k, k * n) > CELLS or k < 3:
                sys.exit(f"shape {s}: M*N, M*K and K*N must be at most {CELLS}, K at least 3")
            for case, obj, extra, budget in CASES:
                before = t.failed
                run_case(t, tmp, app, case, obj, extra, budget, m, n, k, rng)
                print(f"{'PASS' if t.failed == before else 'FAIL'} {case} {s}", flush=True)
    t.finish()


if __name__ == "__main__":
    main()
