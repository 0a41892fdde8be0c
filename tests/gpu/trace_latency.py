#!/usr/bin/env python3
"""Issue 16, launch latency on the GPU: a host-side program (`host/launch/*`) and GPU
entry and exit probes sharing a map (examples/probes/trace_latency.bpf.o) give a
per-block launch-latency histogram and each launch's span under `bpf2ptx trace`; the
application (examples/trace_latency/latency_app.cu, built here with nvcc) measures the
same launches itself, without bpf2ptx: CUDA events around each launch, its own
host/GPU clock offset, its host time before the launch call and, from inside its
kernel, the earliest block start and latest block end on %globaltimer.

Checks (the tolerance: 5 us, the issue's):
- the app's output and exit code are the same with and without the trace;
- the host program ran at every launch; every block is in the histogram; no block
  started before the launch time it read;
- bpf2ptx's clock offset (the trace events' calibration) vs the app's own;
- per launch (the warm-up launch, which pays the instrumentation, left out): the first
  block's latency from bpf2ptx's span (first block start - the host program's launch
  time) vs the app's (its kernel's first block stamp - its host time + its offset), and
  the kernel's span (first block start .. last block end) vs the CUDA events' elapsed
  time around the launch;
- the histogram's first non-empty 1 us bucket vs the smallest first-block latency the
  app measured, and its last vs the largest block start the app saw.

    BPF2PTX=gpu-carry/bpf2ptx python3 tests/gpu/trace_latency.py [OUT.md]

needs nvcc, and the interposer beside the bpf2ptx binary (`cp
target/release/libbpf2ptx_interposer.so gpu-carry/`).
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Table  # noqa: E402

BPF2PTX = os.environ.get("BPF2PTX", "target/release/bpf2ptx")
PROBES = "examples/probes/trace_latency.bpf.o"
APP = "examples/trace_latency/latency_app.cu"
LAUNCHES = int(os.environ.get("LAUNCHES", "50"))
TOL_US = 5.0


def nvcc():
    return shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


def parse_app(stdout):
    offset = spread = None
    launches = []
    for line in stdout.splitlines():
        m = re.match(r"offset (-?\d+) spread (-?\d+)$", line)
        if m:
            offset, spread = int(m.group(1)), int(m.group(2))
        m = re.match(r"launch (\d+) host_ns (\d+) event_us ([\d.]+) first_ns (\d+) last_ns (\d+)$",
                     line)
        if m:
            launches.append(dict(i=int(m.group(1)), host=int(m.group(2)),
                                 event_us=float(m.group(3)), first=int(m.group(4)),
                                 last=int(m.group(5))))
    return offset, spread, launches


def number(v):
    return int(v, 16) if isinstance(v, str) else int(v)


def last_maps(snaps):
    """name -> map of the last snapshot (the one whose `end` is set)."""
    last = [s for s in snaps if s.get("end") is not None]
    out = {}
    for s in last:
        for m in s["maps"]:
            out.setdefault(m["name"], m)
    return out


def entries(m):
    """key -> value of a printed array (`entries`, or a histogram's buckets)."""
    if "entries" in m:
        return {number(e["key"]): number(e["value"]) for e in m["entries"]}
    return {}


def main():
    t = Table("launch latency")
    with tempfile.TemporaryDirectory() as tmp:
        app = os.path.join(tmp, "latency_app")
        subprocess.run([nvcc(), "-O2", "-gencode", "arch=compute_90,code=[sm_90,compute_90]",
                        APP, "-o", app], check=True)
        cmd = [app, str(LAUNCHES)]
        plain = subprocess.run(cmd, capture_output=True, text=True)
        snaps = os.path.join(tmp, "snaps.jsonl")
        events = os.path.join(tmp, "events.json")
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        traced = subprocess.run([BPF2PTX, "trace", "--format", "json", "-o", snaps,
                                 "--trace-events", events, PROBES, "--"] + cmd,
                                capture_output=True, text=True, env=env)
        print(traced.stderr, file=sys.stderr)
        t.check("app", "exit code (untraced, traced)", (plain.returncode, traced.returncode),
                (0, 0))
        t.check("app", "launch lines (untraced, traced)",
                (len(parse_app(plain.stdout)[2]), len(parse_app(traced.stdout)[2])),
                (LAUNCHES + 1, LAUNCHES + 1))
        offset, spread, app = parse_app(traced.stdout)
        model = [(int(n), int(g), int(b)) for n, g, b in
                 re.findall(r"^model launches (\d+) grid (\d+) block (\d+)$", plain.stderr, re.M)]
        total_launches = sum(n for n, _, _ in model)
        total_blocks = sum(n * g for n, g, _ in model)

        maps = last_maps([json.loads(x) for x in open(snaps) if x.startswith("{")])
        host_runs = entries(maps["launches"]).get(0, 0)
        t.check("maps", "host program runs (one per launch)", host_runs, total_launches)
        hist = maps["lat_us"]["histogram"]["buckets"] if "histogram" in maps["lat_us"] else []
        counted = sum(b["count"] for b in hist)
        t.check("maps", "blocks in the 1 us histogram (every block of every launch)", counted,
                total_blocks)
        t.check("maps", "blocks that started before their launch time (early)",
                entries(maps["early"]).get(0, 0), 0)

        doc = json.load(open(events))
        evs = doc["traceEvents"]
        cal = [e for e in evs if e.get("cat") == "calibration"]
        ours = cal[0]["args"]["offset_ns"] if cal else None
        print(f"clock offset: bpf2ptx {ours} ns (spread {cal[0]['args']['spread_ns'] if cal else '-'}),"
              f" app {offset} ns (spread {spread})")
        t.check("clock", f"offset, bpf2ptx vs the app's own, |diff| <= {TOL_US} us",
                ours is not None and abs(ours - offset) <= TOL_US * 1000, True)

        # The work kernel's launches in order (seq); the first is the warm-up.
        kernels = sorted((e for e in evs if e.get("cat") == "kernel" and "work" in e["name"]),
                         key=lambda e: e["args"]["seq"])
        t.check("trace events", "work launches with a span", len(kernels), LAUNCHES + 1)
        rows = []
        for e, a in zip(kernels[1:], app[1:]):
            lat_ours = e["args"]["launch_latency_us"]
            lat_app = (a["first"] - (a["host"] + offset)) / 1000
            span_ours = e["dur"]
            rows.append((a["i"], lat_ours, lat_app, span_ours, a["event_us"],
                         (a["last"] - a["first"]) / 1000))
        print("| launch | first block, bpf2ptx (us) | first block, app (us) | span, bpf2ptx (us) "
              "| CUDA events (us) | span, app (us) |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print("| %d | %.2f | %.2f | %.2f | %.2f | %.2f |" % r)
        if rows:
            lat_diff = max(abs(r[1] - r[2]) for r in rows)
            span_diff = max(abs(r[3] - r[4]) for r in rows)
            print(f"median first-block latency: bpf2ptx {statistics.median(r[1] for r in rows):.2f} us, "
                  f"app {statistics.median(r[2] for r in rows):.2f} us; largest differences: "
                  f"latency {lat_diff:.2f} us, span vs events {span_diff:.2f} us")
            t.check("per launch", "first-block latency > 0 (all launches)",
                    all(r[1] > 0 for r in rows), True)
            t.check("per launch", f"first-block latency, bpf2ptx vs app, max |diff| <= {TOL_US} us",
                    lat_diff <= TOL_US, True)
            t.check("per launch", f"kernel span vs CUDA events, max |diff| <= {TOL_US} us",
                    span_diff <= TOL_US, True)
        # The histogram against the app's own measurements over the same launches (the
        # histogram also holds the warm-up and the app's clock kernel: bounds, not equality).
        nonzero = [b for b in hist if b["count"] > 0 and b["min"] is not None]
        if nonzero and rows:
            lo_us = nonzero[0]["min"]
            app_min = min(r[2] for r in rows)
            print(f"histogram: first bucket [{lo_us}, {lo_us + 1}) us, app's smallest first-block "
                  f"latency {app_min:.2f} us")
            t.check("histogram", f"first bucket vs the app's smallest first-block latency, "
                    f"|diff| <= {TOL_US} us", abs(lo_us - app_min) <= TOL_US + 1, True)
    t.finish()


if __name__ == "__main__":
    main()
