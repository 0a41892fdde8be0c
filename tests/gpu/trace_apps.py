#!/usr/bin/env python3
"""Issue 16 on the GPU: `bpf2ptx trace` on unmodified applications, each run once without
and once with the trace, outputs compared, probe counts against a CPU model.

Applications (tests/gpu/trace): an nvcc-built vector add with the default static cudart
and the same with `-cudart shared`; kernels in CUDA graphs, captured and explicit; an app
of two .cu files; a CuPy program loading PTX. Probes: tests/inject/probes/counters.bpf.o
(entry and exit, per thread, warp and block, on every kernel). Each app prints on stderr
one `model NAME launches L grid G block B` line per kernel; the model: entry and exit per
thread L*G*B each, per warp L*G*ceil(B/32), per block L*G (slots 0-5 of the last
snapshot: one instance per device, shared by every instrumented module of the app, so
the device snapshots are added and the sum section, which adds them already, is skipped).

    BPF2PTX=gpu-carry/bpf2ptx python3 tests/gpu/trace_apps.py [OUT.md]

needs nvcc, CuPy, and the interposer beside the bpf2ptx binary.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Table  # noqa: E402

BPF2PTX = os.environ.get("BPF2PTX", "target/release/bpf2ptx")
PROBES = "tests/inject/probes/counters.bpf.o"
SRC = "tests/gpu/trace"
NVCC = ["nvcc", "-O2", "-gencode", "arch=compute_90,code=[sm_90,compute_90]"]


def apps(tmp):
    def nvcc(name, *srcs, extra=()):
        out = os.path.join(tmp, name)
        subprocess.run(NVCC + list(extra) + [os.path.join(SRC, s) for s in srcs] + ["-o", out],
                       check=True)
        return [out]
    return [
        ("static cudart", nvcc("static", "vector_add.cu") + ["3"]),
        ("shared cudart", nvcc("shared", "vector_add.cu", extra=["-cudart", "shared"]) + ["3"]),
        ("graphs", nvcc("graphs", "graph_app.cu")),
        ("two .cu files", nvcc("two", "two_a.cu", "two_b.cu")),
        ("cupy", ["python3", os.path.join(SRC, "cupy_app.py")]),
    ]


def model(stderr):
    slots = [0] * 6
    for name, l, g, b in re.findall(r"^model (\S+) launches (\d+) grid (\d+) block (\d+)$",
                                    stderr, re.M):
        l, g, b = int(l), int(g), int(b)
        threads, warps = g * b, g * -(-b // 32)
        for s, n in ((0, threads), (1, threads), (2, warps), (4, warps), (3, g), (5, g)):
            slots[s] += l * n
    return slots


def number(v):
    return int(v, 16) if isinstance(v, str) else int(v)


def counted(snaps):
    """Slots 0-5 of `counts` in the last snapshot (the lines whose `end` is set): one
    line per device (each device's one instance of the map, whatever the number of
    modules), added; with several devices the line with `sum_of` is their sum already
    and is skipped. Also the devices seen."""
    last = [s for s in snaps if s.get("end") is not None and "sum_of" not in s]
    slots = [0] * 6
    for s in last:
        for m in s["maps"]:
            if m["name"] != "counts":
                continue
            for e in m.get("entries", []):
                k = number(e["key"])
                if k < 6:
                    slots[k] += number(e["value"])
    return slots, [s["device"] for s in last]


def main():
    t = Table("app")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        for name, cmd in apps(tmp):
            plain = subprocess.run(cmd, capture_output=True, text=True)
            snaps = os.path.join(tmp, "snaps.jsonl")
            t0 = time.time()
            traced = subprocess.run([BPF2PTX, "trace", "--format", "json", "--interval", "200ms",
                                     "-o", snaps, PROBES, "--"] + cmd,
                                    capture_output=True, text=True, env=env)
            wall = time.time() - t0
            print(traced.stderr, file=sys.stderr)
            t.check(name, "exit code (untraced, traced)", (plain.returncode, traced.returncode),
                    (0, 0))
            t.check(name, "output unchanged", traced.stdout == plain.stdout, True)
            lines = [json.loads(x) for x in open(snaps) if x.startswith("{")]
            got, devices = counted(lines)
            first = re.findall(r"\(inject ([\d.]+) ms, (cached JIT|JIT) ([\d.]+) ms\)",
                               traced.stderr)
            t.check(name, f"entry/exit per thread, warp, block (devices {devices}, "
                    f"modules {len(first)}, {wall:.1f} s)", got, model(plain.stderr))
            t.check(name, "one map set per device", len(devices) == len(set(devices)), True)
            print(f"  {name}: instrumented modules {len(first)}: {first}")
    t.finish()


if __name__ == "__main__":
    main()
