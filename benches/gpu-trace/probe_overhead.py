#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Issue 16, "Overhead" (GPU side): the kernel time a probe costs under `bpf2ptx trace`
against the same probe merged by `bpf2ptx inject`, side by side in one run.

vecadd 2^24 (examples/apps/vecadd.ptx, nvcc's PTX) is loaded and launched through the
driver API by probe_time.cu, CUDA events around each launch (median of LAUNCHES after
WARMUP), in three variants per probe of the inject-overhead benchmark
(benches/results/inject-overhead.md):

- native: nvcc's PTX, untraced;
- inject: `bpf2ptx inject PROBE --into vecadd.ptx` (the module's own maps), untraced;
- trace: nvcc's PTX under `bpf2ptx trace PROBE` (the interposer injects it with
  rebound maps at the first launch and binds the process's map instances).

Variants run interleaved, ROUNDS processes each; per variant the median over rounds.
Reported: inject / native, trace / native and trace / inject, which issue 16 wants within
1.02 (2%); and that the output checksum is native's in every variant.

    BPF2PTX=gpu-carry/bpf2ptx python3 benches/gpu-trace/probe_overhead.py [OUT.md] [ROUNDS]

needs nvcc and the interposer beside the bpf2ptx binary.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BPF2PTX = os.environ.get("BPF2PTX", os.path.join(REPO, "target/release/bpf2ptx"))
KERNEL = "_Z6vecAddPKfS0_Pfi"
N, WARMUP, LAUNCHES = 1 << 24, 5, 30
PROBES = ["warp_counter", "thread_counter", "warp_time", "mem_hist"]
TARGET = 1.02


def timed(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"median_ms ([\d.]+) checksum ([\d.]+)", p.stdout)
    if p.returncode != 0 or not m:
        return None, None, f"exit {p.returncode}: {p.stderr.strip()[-300:]}"
    return float(m.group(1)), m.group(2), p.stderr


def main():
    args = [a for a in sys.argv[1:]]
    out = args[0] if args else None
    rounds = int(args[1]) if len(args) > 1 else 5
    app_ptx = os.path.join(REPO, "examples/apps/vecadd.ptx")
    with tempfile.TemporaryDirectory() as tmp:
        app = os.path.join(tmp, "probe_time")
        subprocess.run(["nvcc", "-O2", os.path.join(HERE, "probe_time.cu"), "-o", app, "-lcuda"],
                       check=True)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        run_args = [KERNEL, str(N), str(WARMUP), str(LAUNCHES)]
        variants = {("", "native"): [app, app_ptx] + run_args}
        for p in PROBES:
            obj = os.path.join(REPO, "examples/probes", f"{p}.bpf.o")
            injected = os.path.join(tmp, f"vecadd.{p}.ptx")
            subprocess.run([BPF2PTX, "inject", obj, "--into", app_ptx, "-o", injected],
                           check=True)
            variants[(p, "inject")] = [app, injected] + run_args
            variants[(p, "trace")] = [BPF2PTX, "trace", "-o", os.path.join(tmp, f"{p}.snap"),
                                      obj, "--", app, app_ptx] + run_args
        times = {k: [] for k in variants}
        sums, notes = {}, {}
        for _ in range(rounds):
            for k, cmd in variants.items():
                ms, checksum, err = timed(cmd, env)
                if ms is None:
                    notes[k] = err
                    continue
                times[k].append(ms)
                sums.setdefault(k, checksum)
                if k[1] == "trace":
                    jit = re.findall(r"\(inject [\d.]+ ms, [^)]*\)", err)
                    if jit:
                        notes.setdefault(k, jit[0])
    med = {k: statistics.median(v) for k, v in times.items() if v}
    native = med.get(("", "native"))
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    lines = [
        f"GPU: {gpu}. vecadd 2^24 (examples/apps/vecadd.ptx) through the driver API, CUDA "
        f"events around each launch, median of {LAUNCHES} after {WARMUP} warm-up launches per "
        f"process, {rounds} interleaved rounds, median over rounds.",
        "",
        f"| probe | native ms | inject ms | trace ms | inject / native | trace / native | "
        f"trace / inject | target | output |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    ok = native is not None
    for p in PROBES:
        i, t = med.get((p, "inject")), med.get((p, "trace"))
        same = sums.get((p, "inject")) == sums.get(("", "native")) == sums.get((p, "trace"))
        if native is None or i is None or t is None:
            lines.append(f"| {p} | - | - | - | - | - | - | <= {TARGET}x | FAILED: "
                         f"{notes.get((p, 'inject')) or notes.get((p, 'trace'))} |")
            ok = False
            continue
        met = t / i <= TARGET
        ok = ok and met and same
        lines.append(f"| {p} | {native:.4f} | {i:.4f} | {t:.4f} | {i / native:.3f}x | "
                     f"{t / native:.3f}x | {t / i:.3f}x | {'met' if met else '**MISSED**'} "
                     f"(<= {TARGET}x) | {'= native' if same else 'DIFFERS'} |")
    lines.append("")
    for (p, v), n in sorted(notes.items()):
        lines.append(f"- {p or 'native'} {v}: {n}")
    text = "\n".join(lines)
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
