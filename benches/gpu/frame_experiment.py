#!/usr/bin/env python3
"""Does an unused 80-byte `.local` context frame cost anything per launch? (issue 19)

Every instrumented kernel declares `.local .b8 bpf2ptx_ctx[80]` and takes its address,
so ptxas gives it an 80-byte stack frame even where no inlined body reads the context
from memory. This times vecadd 2^24 native, injected (`bpf2ptx inject`, default options)
and the same injected PTX with the frame removed by hand (declaration and address gone,
r1 = 0: valid only because these bodies never read it), side by side, CUDA events,
interleaved, median of REPS x ROUNDS:

    BPF2PTX=gpu-carry/bpf2ptx python3 benches/gpu/frame_experiment.py [REPS] [ROUNDS]
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

import cupy

BPF2PTX = os.environ.get("BPF2PTX", "target/release/bpf2ptx")
N = 1 << 24
PROBES = ["mem_hist", "thread_counter", "warp_counter"]


def without_frame(ptx):
    ptx = re.sub(r"\t?\.local \.align 8 \.b8 bpf2ptx_ctx\[\d+\];\n", "", ptx)
    ptx = ptx.replace("mov.u64 %bpf2ptx_d0, bpf2ptx_ctx;", "mov.u64 %bpf2ptx_d0, 0;")
    ptx = ptx.replace("cvta.local.u64 %bpf2ptx_d0, %bpf2ptx_d0;\n", "")
    assert "bpf2ptx_ctx" not in ptx
    return ptx


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    tmp = tempfile.mkdtemp()
    native = "examples/apps/vecadd.ptx"
    mods = {"native": native}
    for p in PROBES:
        out = os.path.join(tmp, f"{p}.ptx")
        subprocess.run([BPF2PTX, "inject", f"examples/probes/{p}.bpf.o", "--into", native,
                        "-o", out], check=True)
        nf = os.path.join(tmp, f"{p}.noframe.ptx")
        with open(out) as f, open(nf, "w") as g:
            g.write(without_frame(f.read()))
        mods[p] = out
        mods[p + " (no frame)"] = nf
    a = cupy.random.random(N, dtype=cupy.float32)
    b = cupy.random.random(N, dtype=cupy.float32)
    fns = {}
    for name, path in mods.items():
        fns[name] = (cupy.RawModule(path=path).get_function("_Z6vecAddPKfS0_Pfi"),
                     cupy.zeros(N, dtype=cupy.float32))
    block = 256
    grid = (N + block - 1) // block
    times = {k: [] for k in mods}
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(rounds):
        for name, (fn, c) in fns.items():
            for _ in range(3):
                fn((grid,), (block,), (a, b, c, cupy.int32(N)))
            for _ in range(reps):
                start.record()
                fn((grid,), (block,), (a, b, c, cupy.int32(N)))
                end.record()
                end.synchronize()
                times[name].append(cupy.cuda.get_elapsed_time(start, end))
    ok = all(bool(cupy.array_equal(c, a + b)) for _, c in fns.values())
    base = statistics.median(times["native"])
    print(f"GPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}; vecadd 2^24, "
          f"median of {reps} x {rounds}; outputs == a + b: {ok}")
    print("| module | median ms | vs native |")
    print("|---|---:|---:|")
    for name in mods:
        m = statistics.median(times[name])
        print(f"| {name} | {m:.4f} | {m / base:.3f}x |")


if __name__ == "__main__":
    main()
