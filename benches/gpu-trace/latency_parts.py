#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Issue 16, where trace_latency's 57 us go (benches/results/gpu-2026-12-07.md): the
application examples/trace_latency/latency_app.cu stamps its kernel's first instruction
and its host time before each launch; run untraced and under `bpf2ptx trace` with the
parts of the trace_latency probe added one at a time (benches/gpu-trace/probes/
latency_parts.bpf.c, PART 0-8, then the example probe itself), the growth of the app's
own first-block latency says which part costs it.

    BPF2PTX=gpu-carry/bpf2ptx python3 benches/gpu-trace/latency_parts.py [OUT.md]

Per variant, medians over the launches after the first: the app's first-block latency
(its first stamp - its host time + its clock offset), its kernel span (last - first
stamp) and the CUDA events around the launch. Needs nvcc and the interposer beside
bpf2ptx.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "gpu"))
from trace_latency import parse_app  # noqa: E402

BPF2PTX = os.environ.get("BPF2PTX", "target/release/bpf2ptx")
APP = "examples/trace_latency/latency_app.cu"
LAUNCHES = int(os.environ.get("LAUNCHES", "20"))
VARIANTS = [
    ("untraced", None),
    ("empty entry probe + host program", "benches/gpu-trace/probes/latency_part0.bpf.o"),
    ("+ host map read, device count", "benches/gpu-trace/probes/latency_part1.bpf.o"),
    ("+ launch span (LRU hash)", "benches/gpu-trace/probes/latency_part2.bpf.o"),
    ("+ launch span (plain hash)", "benches/gpu-trace/probes/latency_part3.bpf.o"),
    ("+ the span's update only (NOEXIST, one key)", "benches/gpu-trace/probes/latency_part4.bpf.o"),
    ("+ a span lookup that misses", "benches/gpu-trace/probes/latency_part5.bpf.o"),
    ("+ launch span, a key per block", "benches/gpu-trace/probes/latency_part6.bpf.o"),
    ("+ a span lookup that never runs", "benches/gpu-trace/probes/latency_part7.bpf.o"),
    ("+ a read of the host time only (no hash map)", "benches/gpu-trace/probes/latency_part8.bpf.o"),
    ("examples/probes/trace_latency.bpf.o", "examples/probes/trace_latency.bpf.o"),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        app = os.path.join(tmp, "latency_app")
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        subprocess.run([nvcc, "-O2", "-gencode", "arch=compute_90,code=[sm_90,compute_90]",
                        APP, "-o", app], check=True)
        for name, probe in VARIANTS:
            cmd = [app, str(LAUNCHES)]
            env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
            if probe:
                cmd = [BPF2PTX, "trace", "--interval", "60s", "-o", os.devnull, probe, "--"] + cmd
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            offset, _, launches = parse_app(r.stdout)
            if r.returncode != 0 or offset is None or len(launches) < 2:
                rows.append((name, f"failed (exit {r.returncode}): {r.stderr.strip()[-300:]}"))
                continue
            ls = launches[1:]
            lat = statistics.median((a["first"] - (a["host"] + offset)) / 1000 for a in ls)
            span = statistics.median((a["last"] - a["first"]) / 1000 for a in ls)
            ev = statistics.median(a["event_us"] for a in ls)
            rows.append((name, lat, span, ev))
    lines = ["| variant | app first-block latency (us) | app kernel span (us) | CUDA events (us) |",
             "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]} |  |  |" if len(r) == 2 else
                     "| %s | %.2f | %.2f | %.2f |" % r)
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(f"Medians over {LAUNCHES} launches after the first, per variant "
                    f"(`python3 benches/gpu-trace/latency_parts.py`):\n\n" + text)


if __name__ == "__main__":
    main()
