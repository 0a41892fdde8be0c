#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Issue 18 on the GPU, torch.compile under `bpf2ptx trace`: a small MLP and an attention
block compiled with torch.compile (tests/gpu/trace/compile_app.py; inductor emits Triton
kernels, which Triton builds from PTX) run untraced and under `bpf2ptx trace --format
json` with examples/probes/kernel_stats.bpf.o: per-kernel launch counts and warp-time
histograms, kernels told apart across modules by the trace's kernel ids (every Triton
kernel is a module of its own).

How the Triton kernels get their probes. Triton loads each kernel as a cubin it
assembled itself, so the interposer sees no PTX of it. By default (trace alone) `bpf2ptx
trace`'s Python start-up hook hands each kernel's PTX to the interposer before Triton
assembles it, and the traced run gets Triton and TorchInductor caches of trace's own
(specs/trace.md, "Triton"). `--override` instead instruments the untraced run's dump
(TRITON_KERNEL_DUMP, TRITON_DUMP_DIR) as the interposer would (`bpf2ptx inject
--rebind-maps`, the maps the host program shares placed in pinned host memory,
unsharded) into an override directory that the traced run's Triton assembles
(TRITON_KERNEL_OVERRIDE, TRITON_OVERRIDE_DIR), with `bpf2ptx trace --no-triton`: trace
binds each such cubin at its load. The two modes give the same PTX for a kernel
(tests/tests/trace_compile_cpu.rs).

Both runs set CUDA_LAUNCH_BLOCKING=1: the GPU side of kernel_stats reads the id of the
latest launch call from a one-slot map a host-side program fills at each launch, which
names the right kernel only when launches do not overlap (the probe's comment). Each run
gets fresh Triton and TorchInductor caches and TRITON_ALWAYS_COMPILE=1, so both compile
every kernel.

Both runs are under torch.profiler (CUDA activity, the whole run, compilation included):
per kernel name its launches and warps (grid x ceil(block / 32)). The traced run's is the
model of its maps (TorchInductor's benchmarking of a reduction's configs need not launch
alike in both runs); the two must launch the same Triton kernels. Rows:

- run: exit codes 0; the outputs (the last call of each model) equal, torch.equal;
- kernels: the untraced run launched Triton kernels (names `triton_...`); every one of
  them ran with the probes (its gpu_launches are not 0);
- both modes: the traced run's Triton cache holds the instrumented PTX for each Triton
  kernel (Triton assembled the probes), and trace's stderr has no line saying such a
  module could not be bound (`maps of their own`) or runs unmodified;
- trace alone: `bpf2ptx trace` named each Triton kernel on stderr in a line that is not a
  no-PTX or fallback line (`bpf2ptx trace: triton kernel K: probes in K (inject ...)`);
- override mode: every Triton kernel the untraced run launched was dumped and
  instrumented (`bpf2ptx inject` accepted it);
- per Triton kernel: launches on the GPU (block (0,0,0) at entry) and on the host (the
  host-side program at each launch call) both equal the profiler's count;
- per Triton kernel: the warp-time histogram's total (one count per warp at exit) and the
  host's warps (grid x ceil(block / 32) of each launch call) both equal the profiler's
  warps;
- maps: every kernel that ran with probes, Triton's or not, has as many GPU launches as
  host launches; no map failure (full, busy, dropped).

Names come from the trace's kernel_hashes map (FNV-1a 64 of each id's PTX name) matched
against the names the profiler and the trace's stderr give. The histograms are printed per
kernel. When trace runs the command more than once (several processes), the process whose
GPU side counted most is the one checked.

    BPF2PTX=gpu-carry/bpf2ptx python3 tests/gpu/trace_compile.py [OUT.md] [--override]

needs PyTorch with CUDA and Triton 3.x (else it skips: exit 77), and the interposer
beside the bpf2ptx binary.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Table, fnv1a64, last_snapshots  # noqa: E402
from triton_common import cached_ptx, require_triton  # noqa: E402
from trace_torch import sass_only  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BPF2PTX = os.environ.get("BPF2PTX", os.path.join(REPO, "target/release/bpf2ptx"))
PROBE = os.path.join(REPO, "examples/probes/kernel_stats.bpf.o")
APP = os.path.join(HERE, "trace", "compile_app.py")
BUCKETS = 64
# The maps kernel_stats' host-side program uses, which the interposer places
# (bpf2ptx::host::HostPrograms::map_options), and so does the override's inject
# (tests/tests/trace_compile_cpu.rs checks the lists against the probe).
HOST_MAPS = ["current", "host_launches", "host_warps", "kernel_hashes"]
# Of those, the ones GPU programs read and none writes: in device memory, pushed by the
# interposer at launches (specs/trace.md, "Pushed maps").
PUSHED = ["current"]


def inject_args(ptx, out):
    """`bpf2ptx inject` as the interposer instruments a module under trace (rebound maps,
    the host program's maps unsharded, in pinned host memory unless pushed)."""
    cmd = [BPF2PTX, "inject", PROBE, "--into", ptx, "-o", out, "--rebind-maps"]
    for m in HOST_MAPS:
        cmd += (["--map", f"{m}=host"] if m not in PUSHED else []) + ["--map", f"{m}=unsharded"]
    return cmd


def instrument_dump(dump, override):
    """Every `DUMP/<hash>/<kernel>.ptx` Triton dumped, instrumented into
    `OVERRIDE/<hash>/<kernel>.ptx` (the override's layout); {kernel: error or None}."""
    out = {}
    for root, _, files in os.walk(dump):
        for f in sorted(files):
            if not f.endswith(".ptx"):
                continue
            rel = os.path.relpath(os.path.join(root, f), dump)
            dst = os.path.join(override, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            r = subprocess.run(inject_args(os.path.join(root, f), dst), capture_output=True,
                               text=True)
            out[f[:-len(".ptx")]] = None if r.returncode == 0 else \
                (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    return out


def names_in(line, names):
    """The `names` (kernel names) `line` names as whole words."""
    return {n for n in names if re.search(rf"(?<![\w$.]){re.escape(n)}(?![\w$.])", line)}


def named_on_stderr(stderr, names):
    """The names a `bpf2ptx` stderr line reports, other than lines saying a kernel cannot
    be probed, runs unmodified, or that no probe matched."""
    found = set()
    for line in stderr.splitlines():
        if not line.startswith("bpf2ptx") or any(
                s in line for s in ("cannot be probed", "runs unmodified", "no probe matched")):
            continue
        found |= names_in(line, names)
    return found


def unbound(stderr, names):
    """trace's lines saying that a module holding the probes could not be bound to the
    process's maps (`... maps of their own ...`, `... own copy of the map`), that a
    module's kernels run unmodified in a context, or that one of `names` (kernel names)
    has no PTX to probe. Torch's own SASS-only kernels (`no PTX ... it runs unmodified`)
    are not these."""
    out = []
    for line in stderr.splitlines():
        if not line.startswith("bpf2ptx"):
            continue
        if any(s in line for s in ("maps of their own", "own copy of the map",
                                   "kernels run unmodified")) or (
                "cannot be probed" in line and names_in(line, names)):
            out.append(line)
    return out


def hist_label(b):
    def size(v):
        for unit in ("", "K", "M", "G"):
            if v < 1024:
                return f"{v}{unit}"
            v //= 1024
        return f"{v}T"
    return f"[{size(1 << b)}, {size(1 << (b + 1))}) ns"


def analyse(lines, kernels, stderr, cached, override=None):
    """The rows (case, what, got, want) from the traced run's JSON lines, the profiler's
    per-kernel counts of the untraced run ({name: {launches, warps}}) and the traced
    run's stderr; and the report lines (histograms, the ids). `override`: None in
    trace-only mode, else {"injected": instrument_dump()'s result}; `cached`:
    cached_ptx() of the traced run's Triton cache."""
    rows, report = [], []
    procs = last_snapshots(lines)

    def total(p, name):
        return sum(p["maps"].get(name, {}).values())
    pid = max(procs, key=lambda p: (total(procs[p], "gpu_launches"),
                                    total(procs[p], "host_launches")), default=None)
    maps = procs[pid]["maps"] if pid in procs else {}
    get = lambda name: maps.get(name, {})  # noqa: E731
    gpu, host, warps = get("gpu_launches"), get("host_launches"), get("host_warps")
    hist = get("warp_hist")
    known = set(kernels) | set(sass_only(stderr)[0])
    by_hash = {fnv1a64(n): n for n in known}
    names = {i: by_hash.get(h, f"id {i} (hash {h:#018x})") for i, h in get("kernel_hashes").items()}
    ids = {}
    for i, n in names.items():
        ids.setdefault(n, []).append(i)
    report.append(f"processes in the trace: {len(procs)}; checked: pid {pid}")
    report.append("kernel ids: " + ", ".join(f"{i} {names[i]}" for i in sorted(names)))

    triton = sorted(n for n in kernels if n.startswith("triton_"))
    rows.append(("kernels", f"Triton kernels launched untraced ({len(triton)})",
                 len(triton) > 0, True))
    ran = {names.get(i, f"id {i}") for i, v in gpu.items() if v and i}
    rows.append(("kernels", "Triton kernels that did not run with probes", sorted(set(triton) - ran),
                 []))
    # Triton's dump and cache files are named by the kernel's name cut to 150 characters.
    rows.append(("kernels", "Triton kernels whose PTX in the traced run's Triton cache "
                 "is not the instrumented one",
                 sorted(n for n in triton if not cached.get(n[:150])), []))
    rows.append(("kernels", "trace's lines: a module not bound to the process's maps, "
                 "or a Triton kernel with no PTX", unbound(stderr, triton), []))
    if override is None:
        rows.append(("trace", "Triton kernels trace did not name as instrumented (stderr)",
                     sorted(set(triton) - named_on_stderr(stderr, triton)), []))
    else:
        inj = override["injected"]
        rows.append(("override", "Triton kernels not dumped, or not instrumented "
                     "(bpf2ptx inject --rebind-maps)",
                     sorted(n for n in triton if inj.get(n[:150], "not dumped") is not None),
                     []))
        failed = {n: e for n, e in inj.items() if e}
        if failed:
            report.append(f"inject failed: {failed}")
    others = sorted(ran - set(triton))
    if others:
        report.append(f"other kernels that ran with probes: {others}")
    for n in triton:
        want = kernels[n]
        mine = ids.get(n, [])
        g = sum(gpu.get(i, 0) for i in mine)
        h = sum(host.get(i, 0) for i in mine)
        w = sum(warps.get(i, 0) for i in mine)
        buckets = {}
        for i in mine:
            for b in range(BUCKETS):
                if hist.get(i * BUCKETS + b):
                    buckets[b] = buckets.get(b, 0) + hist[i * BUCKETS + b]
        rows.append((n, "launches: GPU, host (trace) = torch.profiler's (untraced)", (g, h),
                     (want["launches"], want["launches"])))
        model_warps = want["warps"] if want["warps"] is not None else w
        rows.append((n, "warps: histogram total, host (trace) = torch.profiler's (untraced)",
                     (sum(buckets.values()), w), (model_warps, model_warps)))
        report.append(f"{n} (ids {mine}): {g} launches, warp time: " + (", ".join(
            f"{hist_label(b)} {c}" for b, c in sorted(buckets.items())) or "(empty)"))
    twins = sorted((names.get(i, f"id {i}"), v, host.get(i, 0)) for i, v in gpu.items()
                   if v and v != host.get(i, 0))
    rows.append(("maps", "kernels whose GPU launches differ from their host launches", twins,
                 []))
    rows.append(("maps", "failures (full, busy, dropped)",
                 procs[pid]["failures"] if pid in procs else "no snapshot", []))
    return rows, report


def run(cmd, env):
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return r, time.time() - t0


def main():
    override = "--override" in sys.argv
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = args[0] if args else None
    sys.argv[1:] = args  # Table.finish writes to argv[1]
    require_triton(out)
    import torch
    t = Table("compile")
    t.finish_on_sigterm()
    with tempfile.TemporaryDirectory() as tmp:
        def env(tag, **more):
            d = os.path.join(tmp, tag)
            return dict(os.environ, CUDA_LAUNCH_BLOCKING="1", TRITON_ALWAYS_COMPILE="1",
                        TRITON_CACHE_DIR=os.path.join(d, "triton"),
                        TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor"),
                        XDG_CACHE_HOME=os.path.join(tmp, "xdg"), **more)
        prof = os.path.join(tmp, "profile.json")
        dump, ov = os.path.join(tmp, "dump"), os.path.join(tmp, "override")
        plain_out, traced_out = os.path.join(tmp, "plain.pt"), os.path.join(tmp, "traced.pt")
        dumping = {"TRITON_KERNEL_DUMP": "1", "TRITON_DUMP_DIR": dump} if override else {}
        plain, s1 = run([sys.executable, APP, plain_out, "--profile", prof],
                        env("plain", **dumping))
        print(plain.stdout, plain.stderr[-4000:], sep="\n", file=sys.stderr)
        ov_facts, overriding = None, {}
        if override:
            injected = instrument_dump(dump, ov)
            print(f"  instrumented {sum(e is None for e in injected.values())} of "
                  f"{len(injected)} dumped kernels into {ov}", file=sys.stderr)
            ov_facts = {"injected": injected}
            overriding = {"TRITON_KERNEL_OVERRIDE": "1", "TRITON_OVERRIDE_DIR": ov}
        snaps = os.path.join(tmp, "snaps.jsonl")
        # Trace alone gives the traced run caches of its own (under XDG_CACHE_HOME);
        # --no-triton keeps the ones set here.
        # The traced run is profiled too: its own launches are the model of its maps (the
        # runs need not launch alike: TorchInductor benchmarks a reduction's configs, and
        # how many it keeps depends on what each compiles to).
        prof_traced = os.path.join(tmp, "profile-traced.json")
        traced, s2 = run([BPF2PTX, "trace", "--format", "json", "--interval", "2s", "-o", snaps]
                         + (["--no-triton"] if override else [])
                         + [PROBE, "--", sys.executable, APP, traced_out,
                            "--profile", prof_traced],
                         env("traced", **overriding))
        print(traced.stdout, traced.stderr[-6000:], sep="\n", file=sys.stderr)
        cache = os.path.join(tmp, "traced", "triton") if override else \
            os.path.join(tmp, "xdg", "bpf2ptx", "triton")
        cached = cached_ptx(cache)
        t.check("run", f"exit codes, untraced ({s1:.0f} s) and traced ({s2:.0f} s)",
                (plain.returncode, traced.returncode), (0, 0))
        same = False
        if os.path.exists(plain_out) and os.path.exists(traced_out):
            a, b = torch.load(plain_out), torch.load(traced_out)
            same = sorted(a) == sorted(b) and all(torch.equal(a[k], b[k]) for k in a)
        t.check("run", "outputs equal (torch.equal, both models)", same, True)
        kernels, versions = {}, ""
        if os.path.exists(prof):
            with open(prof) as f:
                p = json.load(f)
            kernels, versions = p["kernels"], f"torch {p['torch']}, Triton {p['triton']}"
        t.check("run", "the traced run's profile (the model of its launches) was written",
                os.path.exists(prof_traced), True)
        if os.path.exists(prof_traced):
            with open(prof_traced) as f:
                traced_kernels = json.load(f)["kernels"]
            launched = lambda ks: sorted(n for n in ks if n.startswith("triton_"))  # noqa: E731
            t.check("run", "Triton kernels launched, untraced = traced", launched(traced_kernels),
                    launched(kernels))
            kernels = traced_kernels
        lines = []
        if os.path.exists(snaps):
            with open(snaps) as f:
                lines = [json.loads(x) for x in f if x.lstrip().startswith("{")]
        rows, report = analyse(lines, kernels, traced.stderr, cached, ov_facts)
        for r in rows:
            t.check(*r)
        mode = "override (bpf2ptx inject --rebind-maps into TRITON_OVERRIDE_DIR)" if override \
            else "trace alone"
        print(f"  {versions}; Triton kernels instrumented by: {mode}")
        for line in report:
            print(f"  {line}")
    t.finish(head=[f"# torch.compile under bpf2ptx trace ({versions}; Triton kernels "
                   f"instrumented by: {mode})"])


if __name__ == "__main__":
    main()
