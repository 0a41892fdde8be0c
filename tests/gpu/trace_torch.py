#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Issue 16 on the GPU, the PyTorch case: `bpf2ptx trace` on a PyTorch script whose
C++/CUDA extension was built with `+PTX` (tests/gpu/trace/torch_app.py,
tests/gpu/trace/torch_ext/ops.cu). The extension's kernels are probed; torch's own
kernels (random numbers, an add, a reduction, cuBLAS's matmul), SASS only in torch's
wheels, are named as such and left alone.

Steps: build the extension once, untraced (torch_app.py build: TORCH_CUDA_ARCH_LIST
"9.0+PTX", torch.utils.cpp_extension.load with ninja, else setuptools without it); check
that its .so carries the kernels' PTX (`bpf2ptx inject` finds both kernels in it, on
the CPU); run the script untraced and under `bpf2ptx trace --format json` with
tests/inject/probes/counters.bpf.o (entry and exit, per thread, warp and block, on every
kernel `*`: torch's kernels are matched too, which is what makes the trace say they have
no PTX).

Checks, each a row:
- exit codes 0 and the script's output unchanged (its checksums are of what the kernels
  computed, summed on the CPU: the instrumented kernels compute the same bits);
- the counts (slots 0-5: entry and exit per thread, per warp, per block) equal the CPU
  model from the script's `model` lines: per thread L*G*B, per warp L*G*ceil(B/32), per
  block L*G, summed over its kernels; torch's kernels add nothing;
- the kernels trace instrumented ("probes in ..." lines) are exactly the extension's two;
- the trace's stderr names at least one of torch's kernels in a "no PTX (SASS for ...)"
  line (the interposer's `no_ptx` report, specs/trace.md). A torch build that ships PTX
  for an architecture above the GPU's (nightlies carry `12.0+PTX`) gets a fallback line
  instead, which this row reports as a failure: that PTX cannot run on the GPU either.

The counts are read from every `counts` map found anywhere in the last snapshot (the
lines whose `end` is set) and summed, so the check reads today's shape (one line per
instrumented module, `maps` in each) and a later one (one instance per process and
device, nested under other keys) alike.

    BPF2PTX=gpu-carry/bpf2ptx python3 tests/gpu/trace_torch.py [OUT.md]

needs PyTorch with CUDA, nvcc (the toolkit torch was built for; CUDA_HOME or nvcc on
PATH), a host C++ compiler, and the interposer beside the bpf2ptx binary.
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
APP = "tests/gpu/trace/torch_app.py"
# The extension's kernels by PTX name (torch_ext/ops.cu).
EXT_KERNELS = {"ext_scale_add", "_Z7row_sumILi96EEvPKfPfi"}


def add_launches(slots, launches, grid, block):
    """Adds to `slots` (0-5 of counters.bpf.o's `counts`) what `launches` launches of
    `grid` blocks of `block` threads (1-D) count: entry and exit per thread, per warp
    (ceil(block / 32) a block), per block."""
    threads, warps = grid * block, grid * -(-block // 32)
    for s, n in ((0, threads), (1, threads), (2, warps), (4, warps), (3, grid), (5, grid)):
        slots[s] += launches * n
    return slots


def model(stderr):
    """Slots 0-5 the `model NAME launches L grid G block B` lines predict."""
    slots = [0] * 6
    for _, l, g, b in re.findall(r"^model (\S+) launches (\d+) grid (\d+) block (\d+)$",
                                 stderr, re.M):
        add_launches(slots, int(l), int(g), int(b))
    return slots


def number(v):
    return int(v, 16) if isinstance(v, str) else int(v)


def walk(node):
    yield node
    if isinstance(node, dict):
        for v in node.values():
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


def counted(lines, name="counts"):
    """Slots 0-5 of every map called `name` in the last snapshot, summed, and how many
    instances there were. The last snapshot: the lines whose `end` is set. A map is a
    dict with a string `name` and a `key_size`, wherever it is nested (per module today,
    per process and device later)."""
    last = [s for s in lines if s.get("end") is not None]
    slots, found = [0] * 6, 0
    for node in walk(last):
        if isinstance(node, dict) and node.get("name") == name and "key_size" in node:
            found += 1
            for e in node.get("entries", []):
                k = number(e["key"])
                if k < 6:
                    slots[k] += number(e["value"])
    return slots, found


def instrumented(stderr):
    """Kernels the trace instrumented: `bpf2ptx trace: LABEL: probes in K1, K2 (inject`."""
    out = set()
    for ks in re.findall(r"^bpf2ptx trace: .*?: probes in (.+?) \(inject ", stderr, re.M):
        out.update(k.strip() for k in ks.split(","))
    return out


def sass_only(stderr):
    """Kernels the trace named as having no PTX (`... no PTX (SASS for ...), so kernel K
    cannot be probed ...`), and the fallback lines of other reasons."""
    kernels, fallbacks = [], []
    for line in stderr.splitlines():
        if not line.startswith("bpf2ptx trace: "):
            continue
        m = re.search(r": no PTX \(SASS for [^)]*\), so kernels? (\S+?),? cannot be probed", line)
        if m:
            kernels.append(m.group(1))
        elif line.endswith("it runs unmodified"):
            fallbacks.append(line)
    return kernels, fallbacks


def run(cmd, env):
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return r, time.time() - t0


def build_extension(t, tmp, env):
    """Builds the extension into `tmp`/ext, untraced (torch_app.py build), and checks on
    the CPU that its .so carries both kernels' PTX: two `build` rows of `t`. The folder,
    or None when the build failed (tests/gpu/trace_ddp.py builds it the same way)."""
    ext = os.path.join(tmp, "ext")
    # Set here, not defaulted: a machine's own TORCH_CUDA_ARCH_LIST (the GPU machine's
    # says 9.0a: SASS only) would leave no PTX to probe.
    env = dict(env, TORCH_CUDA_ARCH_LIST="9.0+PTX")
    b, secs = run([sys.executable, APP, "build", ext], env)
    print(b.stdout[-4000:], b.stderr[-4000:], sep="\n", file=sys.stderr)
    t.check("build", f"extension built with +PTX ({secs:.0f} s)", b.returncode, 0)
    if b.returncode != 0:
        return None
    so = [os.path.join(ext, f) for f in os.listdir(ext)
          if f.startswith("trace_torch_ext") and f.endswith(".so")]
    sites = os.path.join(tmp, "sites.json")
    r = subprocess.run([BPF2PTX, "inject", PROBES, "--into", so[0],
                        "-o", os.path.join(tmp, "ext.probed.ptx"), "--sites", sites],
                       capture_output=True, text=True)
    found = set()
    if r.returncode == 0:
        found = {s["kernel"] for s in json.load(open(sites))}
    else:
        print(r.stderr, file=sys.stderr)
    t.check("build", "kernels with PTX in the .so (bpf2ptx inject, on the CPU)",
            sorted(found), sorted(EXT_KERNELS))
    return ext


def main():
    t = Table("torch")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        ext = build_extension(t, tmp, env)
        if ext is None:
            t.finish()

        cmd = [sys.executable, APP, "run", ext]
        plain, _ = run(cmd, env)
        snaps = os.path.join(tmp, "snaps.jsonl")
        traced, secs = run([BPF2PTX, "trace", "--format", "json", "--interval", "200ms",
                            "-o", snaps, PROBES, "--"] + cmd, env)
        print(traced.stderr, file=sys.stderr)
        t.check("run", "exit code (untraced, traced)", (plain.returncode, traced.returncode),
                (0, 0))
        t.check("run", "output unchanged", traced.stdout == plain.stdout, True)
        if traced.stdout != plain.stdout:
            print(f"untraced:\n{plain.stdout}\ntraced:\n{traced.stdout}", file=sys.stderr)

        lines = []
        if os.path.exists(snaps):
            lines = [json.loads(x) for x in open(snaps) if x.lstrip().startswith("{")]
        got, n = counted(lines)
        want = model(plain.stderr)
        # No model line (the script failed before printing them) is a failure, not 0 = 0.
        t.check("counts", f"entry/exit per thread, warp, block ({n} map instances, "
                f"{secs:.1f} s traced)", got if any(want) else "no model lines", want)

        probed = instrumented(traced.stderr)
        t.check("kernels", "instrumented: the extension's kernels only", sorted(probed),
                sorted(EXT_KERNELS))
        torch_sass, fallbacks = sass_only(traced.stderr)
        torch_sass = [k for k in torch_sass if k not in EXT_KERNELS]
        print(f"  torch kernels named as SASS-only ({len(torch_sass)}):", file=sys.stderr)
        for k in torch_sass:
            print(f"    {k}", file=sys.stderr)
        print(f"  other fallback lines ({len(fallbacks)}):", file=sys.stderr)
        for f in fallbacks[:20]:
            print(f"    {f}", file=sys.stderr)
        t.check("kernels", f"torch's kernels named as SASS-only ({len(torch_sass)} lines, "
                f"{len(fallbacks)} other fallbacks)", len(torch_sass) > 0, True)
        times = re.findall(r"probes in .*\(inject ([\d.]+) ms, (cached JIT|JIT) ([\d.]+) ms\)",
                           traced.stderr)
        print(f"  first launch's inject and JIT: {times}")
    t.finish()


if __name__ == "__main__":
    main()
