#!/usr/bin/env python3
"""Issue 16 on the GPU: `bpf2ptx trace` on unmodified applications, each run once without
and once with the trace, outputs compared, probe counts against a CPU model.

Applications (tests/gpu/trace): an nvcc-built vector add with the default static cudart
and the same with `-cudart shared`; kernels in CUDA graphs, captured and explicit; an app
of two .cu files; a CuPy program loading PTX; an app on two GPUs (issue 20; skipped, exit
77, with fewer). Probes: tests/inject/probes/counters.bpf.o (entry and exit, per thread,
warp and block, on every kernel). Each app prints on stderr one `model NAME launches L
grid G block B [device D]` line per kernel (and device); the model: entry and exit per
thread L*G*B each, per warp L*G*ceil(B/32), per block L*G. Counted: slots 0-5 of the last
snapshot, per device (one instance of the map per device, shared by every instrumented
module of the app there), each device against its own model, and with several devices
the sum section against the sum of the models.

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
        ("two devices", nvcc("twodev", "two_devices.cu") + ["3"]),
    ]


def model(stderr):
    """Slots 0-5 per device, from the app's `model` lines (device 0 when a line names
    none)."""
    per = {}
    for name, l, g, b, d in re.findall(
            r"^model (\S+) launches (\d+) grid (\d+) block (\d+)(?: device (\d+))?$",
            stderr, re.M):
        l, g, b = int(l), int(g), int(b)
        slots = per.setdefault(int(d or 0), [0] * 6)
        threads, warps = g * b, g * -(-b // 32)
        for s, n in ((0, threads), (1, threads), (2, warps), (4, warps), (3, g), (5, g)):
            slots[s] += l * n
    return per


def number(v):
    return int(v, 16) if isinstance(v, str) else int(v)


def slots_of(snap):
    """Slots 0-5 of `counts` in one snapshot line."""
    slots = [0] * 6
    for m in snap["maps"]:
        if m["name"] != "counts":
            continue
        for e in m.get("entries", []):
            k = number(e["key"])
            if k < 6:
                slots[k] += number(e["value"])
    return slots


def counted(snaps):
    """Slots 0-5 of `counts` in the last snapshot (the lines whose `end` is set): per
    device (a device's one instance of the map, whatever the number of modules; its
    line's `device`), and the sum section's (the line with `sum_of`; None with one
    device). Also the devices in line order, to check each appears once."""
    last = [s for s in snaps if s.get("end") is not None]
    devices = [s for s in last if "sum_of" not in s]
    sums = [slots_of(s) for s in last if "sum_of" in s]
    return ({s["device"]: slots_of(s) for s in devices}, sums[0] if sums else None,
            [s["device"] for s in devices])


def main():
    t = Table("app")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        for name, cmd in apps(tmp):
            plain = subprocess.run(cmd, capture_output=True, text=True)
            if plain.returncode == 77:
                print(f"  {name}: skipped ({plain.stdout.strip()})")
                continue
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
            got, total, devices = counted(lines)
            want = model(plain.stderr)
            first = re.findall(r"\(inject ([\d.]+) ms, (cached JIT|JIT) ([\d.]+) ms\)",
                               traced.stderr)
            t.check(name, f"entry/exit per thread, warp, block, per device (modules "
                    f"{len(first)}, {wall:.1f} s)", got, want)
            t.check(name, "one map set per device", sorted(devices), sorted(set(devices)))
            if len(want) > 1:
                t.check(name, "the sum section: the devices' counts added", total,
                        [sum(w[k] for w in want.values()) for k in range(6)])
            print(f"  {name}: instrumented modules {len(first)}: {first}")
    t.finish()


if __name__ == "__main__":
    main()
