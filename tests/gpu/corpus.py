#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Issue 18, "Build" 4 on the GPU: a real-world PTX corpus, regenerated here (never
committed), instrumented with the gallery's probes: ptxas must accept every instrumented
module, every instrumented kernel must give the uninstrumented kernel's results, and every
opcode in the corpus must have a row of specs/abi.md's coverage table ("Coverage table").

Four parts, run side by side (each in a thread of its own, its commands as child
processes), in a work directory that is kept and printed:

  cub     tests/gpu/trace/corpus_cub.cu (thrust::sort, cub::DeviceRadixSort::SortPairs-
          Descending, cub::DeviceReduce::Sum, cub::DeviceScan::InclusiveSum,
          thrust::transform; every result checked on the CPU), built with nvcc PTX only
          (-gencode arch=compute_90,code=compute_90: the driver JITs it); its PTX taken out
          of the executable with `cuobjdump -xptx all`. Results: the app run untraced and
          under `bpf2ptx trace` (the interposer instruments the PTX the driver JITs).
  triton  tests/gpu/trace/corpus_triton.py (elementwise add, softmax, matmul with tl.dot,
          flash-attention forward); the PTX from Triton's dump (TRITON_KERNEL_DUMP=1,
          TRITON_DUMP_DIR) of the untraced run. Results: untraced and under `bpf2ptx
          trace`, whose Python start-up hook instruments each kernel's PTX before Triton
          assembles it (specs/trace.md, "Triton").
  xla     tests/gpu/trace/corpus_jax.py (layer norm and softmax, a transposed cumulative
          sum, an int32 scatter-add, a sort, a small MLP, and jax.random's kernels); the PTX
          XLA assembles itself, from `XLA_FLAGS=--xla_dump_to=DIR` (with
          --xla_gpu_autotune_level=0 and --xla_gpu_force_compilation_parallelism=1 where
          this jaxlib knows them, so a module is one PTX file and the GEMM choice does not
          depend on timing) where the dump holds .ptx files, else from a ptxas wrapper
          (tests/gpu/trace/xla_ptxas_wrapper.py) that keeps a copy of every PTX XLA
          assembles: ROOT/bin/ptxas of a CUDA root whose other entries are links to the
          real one's, handed to XLA by --xla_gpu_cuda_data_dir=ROOT, CUDA_ROOT=ROOT (from
          which JAX sets that option itself) and PATH, with
          --xla_gpu_enable_libnvptxcompiler=false and --xla_gpu_enable_libnvjitlink=false
          where this jaxlib knows them (so XLA runs ptxas rather than assembling in-process).
          Results, from the dump: the instrumented PTX fed back with XLA's debug option
          --xla_gpu_ptx_file=FILE (one per module, named as dumped, so XLA matches it to
          its module by the name's prefix) and a second dump, which shows what XLA
          assembled: a module whose second dump holds the probes ran them. From the wrapper
          (or where --xla_gpu_ptx_file is unknown or takes effect for no module, and the
          wrapper captured the dumped modules as they are): a second run in which the
          wrapper gives ptxas each instrumented module in place of the PTX it was made from
          (the same sha256); its log counts the modules replaced (at least one; the first
          run's modules the second did not compile again are counted, not failed). Where
          neither gives a result, the results row is `skipped` and says why: ptxas is then
          the only check of XLA's PTX. With no PTX from the dump nor the wrapper, the dump
          row fails and says whether the wrapper ran, and the XLA_FLAGS.
  torch   the PyTorch extension of tests/gpu/trace_torch.py (tests/gpu/trace/torch_ext,
          built by its build_extension with TORCH_CUDA_ARCH_LIST="9.0+PTX"); its PTX from
          the .so with cuobjdump. Results: tests/gpu/trace/torch_app.py run untraced and
          under `bpf2ptx trace`.

Rows, per part:

- the part's own build or dump (nvcc, cuobjdump, the extension, Triton's and XLA's dumps
  hold the kernels expected; XLA's, or its ptxas wrapper, some PTX: the row says which);
- per probe (examples/probes/mem_traffic.bpf.o: every memory access; warp_time.bpf.o:
  warp entry and exit; launch_count.bpf.o: block entry): every module through `bpf2ptx
  inject PROBE --into M -o OUT --allow-no-match` and `ptxas -arch=sm_90 OUT -o /dev/null`
  (`-arch=sm_90a` for a `.target sm_90a` module; a module whose `.version` this ptxas
  does not know goes to the next ptxas found: Triton's own, the nvidia pip packages'), no
  module failing; the sites counted;
- results, with mem_traffic (the most intrusive probe): exit codes 0, the outputs equal
  bit for bit (the apps' checksums of their outputs' bytes; Triton's and XLA's arrays
  byte for byte), the kernels instrumented (trace's `probes in` lines: every kernel of
  the module with a memory site, Triton's four, the extension's two; Triton's cache of
  the traced run holds the probes for each of its kernels), and the probe ran (the last
  snapshot's traffic_bytes are not 0, no map failure);
- opcodes: every opcode of the part's modules has a row of specs/abi.md's coverage table
  (tests/gpu/ptx_opcodes.py reads the table and the PTX; tests/tests/corpus_cpu.rs
  checks that reader against the Rust one), so it is a memory attach point or listed as
  deliberately not one; the opcodes without a row are the row's FAIL.

A part whose dependency is missing (nvcc or CUB's headers, PyTorch, Triton, JAX or JAX
without a GPU backend) has one `skipped` row saying which; when every part is skipped the
check exits 77. After the table: each module (kernels, instructions, sites, which ptxas)
and each row of the coverage table the corpus used, with its instructions per part.

    BPF2PTX=gpu-carry/bpf2ptx [CORPUS_ARCHIVE=FILE.tar.gz] python3 tests/gpu/corpus.py OUT.md

CORPUS_ARCHIVE keeps the corpus's PTX as generated (`PART/NNN.NAME.ptx`), for
tests/tests/corpus_cpu.rs on another machine (BPF2PTX_CORPUS_DIR: the folder it is
unpacked in).

Needs the interposer beside the bpf2ptx binary, and a GPU of compute capability 9.0.
Step `corpus` of tests/gpu/open_issues.sh (about two and a half minutes, mostly the
extension's build and JAX's and Triton's compiles).
"""
import collections
import concurrent.futures
import glob
import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from checks import Table, last_snapshots, skip  # noqa: E402
from ptx_opcodes import CoverageTable, opcodes  # noqa: E402
from trace_torch import instrumented  # noqa: E402
from triton_common import MARK, cached_ptx  # noqa: E402

BPF2PTX = os.path.abspath(os.environ.get("BPF2PTX", os.path.join(REPO, "target/release/bpf2ptx")))
PROBES = {p: os.path.join(REPO, "examples/probes", f"{p}.bpf.o")
          for p in ("mem_traffic", "warp_time", "launch_count")}
RUN_PROBE = "mem_traffic"
CUB_SRC = os.path.join(HERE, "trace", "corpus_cub.cu")
TRITON_APP = os.path.join(HERE, "trace", "corpus_triton.py")
JAX_APP = os.path.join(HERE, "trace", "corpus_jax.py")
TORCH_APP = os.path.join(HERE, "trace", "torch_app.py")
TRITON_KERNELS = ["add_kernel", "softmax_kernel", "matmul_kernel", "attn_fwd"]
# XLA flags that make each module one PTX file (no parallel split into shards, which
# --xla_gpu_ptx_file cannot tell apart) and the GEMM choice independent of timing; dropped,
# and said, where this jaxlib does not know them.
XLA_OPTIONAL = ["--xla_gpu_autotune_level=0", "--xla_gpu_force_compilation_parallelism=1"]
# With the ptxas wrapper (tests/gpu/trace/xla_ptxas_wrapper.py): XLA assembles its PTX with
# a ptxas subprocess, not in-process with libnvptxcompiler or libnvjitlink (either of which
# it takes first where its build has it); dropped, and said, where unknown.
XLA_SUBPROCESS = ["--xla_gpu_enable_libnvptxcompiler=false",
                  "--xla_gpu_enable_libnvjitlink=false"]
XLA_WRAPPER = os.path.join(HERE, "trace", "xla_ptxas_wrapper.py")
PARTS = ["cub", "triton", "xla", "torch"]

# ---------------------------------------------------------------- processes

_procs, _procs_lock = set(), threading.Lock()


class Ran:
    """A finished command: rc (an int, or "timeout"), out, err, secs."""

    def __init__(self, rc, out, err, secs):
        self.rc, self.out, self.err, self.secs = rc, out, err, secs

    def tail(self, n=6):
        lines = (self.err.strip() or self.out.strip()).splitlines()
        return " / ".join(lines[-n:]) if lines else f"exit {self.rc}"

    def last_line(self):
        lines = self.out.strip().splitlines()
        return lines[-1] if lines else self.tail(1)


def sh(cmd, log, env=None, timeout=150, cwd=None):
    """Runs `cmd` (written to LOG.cmd), its stdout and stderr into LOG.out and LOG.err
    (files, so that nothing blocks on a full pipe); a Ran. A command still running at
    `timeout` seconds is killed."""
    t0 = time.time()
    with open(log + ".cmd", "w") as c:
        c.write(" ".join(map(str, cmd)) + "\n")
    with open(log + ".out", "w") as o, open(log + ".err", "w") as e:
        try:
            p = subprocess.Popen([str(c) for c in cmd], stdout=o, stderr=e, env=env, cwd=cwd)
        except OSError as err:
            return Ran(127, "", str(err), 0.0)
        with _procs_lock:
            _procs.add(p)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            rc = "timeout"
        finally:
            with _procs_lock:
                _procs.discard(p)
    with open(log + ".out", errors="replace") as o, open(log + ".err", errors="replace") as e:
        out, err = o.read(), e.read()
    return Ran(rc, out, err, time.time() - t0)


def stop_all():
    with _procs_lock:
        for p in list(_procs):
            try:
                p.terminate()
            except OSError:
                pass


def tool(name, near=None):
    """`name` on PATH, beside `near`, in CUDA_HOME/bin or /usr/local/cuda/bin."""
    for c in (shutil.which(name), near and os.path.join(os.path.dirname(near), name),
              os.path.join(os.environ.get("CUDA_HOME", "/nonexistent"), "bin", name),
              os.path.join("/usr/local/cuda/bin", name)):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def have(module):
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# ---------------------------------------------------------------- ptxas

class Ptxas:
    """The ptxas binaries here: the system's first (PATH, CUDA_HOME, /usr/local/cuda), then
    Triton's own and the nvidia pip packages', newest first. A module goes to the first
    that knows its `.version` (Triton and XLA write the PTX ISA of the ptxas they bundle,
    which may be newer than the system's)."""

    def __init__(self):
        found = [tool("ptxas")]
        spec = importlib.util.find_spec("triton") if have("triton") else None
        if spec and spec.origin:
            nv = os.path.join(os.path.dirname(spec.origin), "backends", "nvidia", "bin")
            found += [os.path.join(nv, "ptxas-blackwell"), os.path.join(nv, "ptxas")]
        found.append(os.environ.get("TRITON_PTXAS_PATH"))
        for base in sys.path:
            found += sorted(glob.glob(os.path.join(base, "nvidia", "*", "bin", "ptxas")))
        self.all, seen = [], set()
        for p in found:
            if not p or not os.path.isfile(p) or not os.access(p, os.X_OK):
                continue
            real = os.path.realpath(p)
            if real in seen:
                continue
            seen.add(real)
            r = subprocess.run([p, "--version"], capture_output=True, text=True)
            m = re.search(r"release (\d+)\.(\d+)", r.stdout)
            self.all.append((p, (int(m.group(1)), int(m.group(2))) if m else (0, 0)))
        first, rest = self.all[:1], self.all[1:]
        self.all = first + sorted(rest, key=lambda x: x[1], reverse=True)

    def describe(self):
        return ", ".join(f"{p} ({v[0]}.{v[1]})" for p, v in self.all) or "none found"

    def assemble(self, path):
        """(ok, which ptxas, message): `ptxas -arch=ARCH path -o /dev/null` with ARCH the
        module's own `.target` when it is an arch-specific one (sm_90a), else sm_90."""
        arch = target_arch(path)
        if not self.all:
            return False, "-", "no ptxas found (PATH, CUDA_HOME, Triton, nvidia pip packages)"
        unsupported = []
        for p, v in self.all:
            r = subprocess.run([p, f"-arch={arch}", path, "-o", "/dev/null"],
                               capture_output=True, text=True, timeout=300)
            if r.returncode == 0:
                return True, f"{os.path.basename(p)} {v[0]}.{v[1]} -arch={arch}", ""
            if "Unsupported .version" in r.stderr:
                unsupported.append(f"{v[0]}.{v[1]}")
                continue
            err = [x for x in r.stderr.splitlines() if "error" in x or "fatal" in x]
            return False, f"{os.path.basename(p)} {v[0]}.{v[1]}", " / ".join(err[:3])
        return False, "-", f"no ptxas here knows its .version (tried {', '.join(unsupported)})"


def target_arch(path):
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"\s*\.target\s+(sm_\d+[af]?)", line)
            if m:
                t = m.group(1)
                return t if t[-1] in "af" else "sm_90"
    return "sm_90"


# ---------------------------------------------------------------- a part

class PartTable(Table):
    """A part's rows, its name first (`torch: build` for trace_torch's `build` rows)."""

    def __init__(self, part):
        super().__init__("part")
        self.part = part

    def name(self, case):
        return self.part if case in (self.part, None) else f"{self.part}: {case}"

    def check(self, case, what, got, want):
        super().check(self.name(case), what, got, want)

    def skip(self, case, what, why):
        super().skip(self.name(case), what, why)


class Part:
    def __init__(self, name, work, ptxas, pool):
        self.name, self.ptxas, self.pool = name, ptxas, pool
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir, exist_ok=True)
        self.t = PartTable(name)
        self.modules = []        # the corpus: PTX files
        self.details = []        # per module and probe: dicts for the report
        self.sites = {}          # module -> {probe: set of kernels with sites}
        self.versions = ""
        self.skipped = None      # why, when the part could not run here

    def log(self, tag):
        return os.path.join(self.dir, tag)

    def skip_part(self, why):
        self.skipped = why
        self.t.skip(self.name, "the part", why)

    # ------------------------------------------------------------ the ptxas rows

    def check_modules(self):
        """Every module through inject and ptxas with every probe: a row per probe."""
        if not self.modules:
            return self.t.check(None, "PTX modules in the corpus", 0, "at least 1")
        jobs = {}
        for i, m in enumerate(self.modules):
            for probe in PROBES:
                jobs[(m, probe)] = self.pool.submit(self.inject_one, i, m, probe)
        for probe in PROBES:
            fails, sites, kernels, plain = [], 0, 0, 0
            used = Counter()
            for m in self.modules:
                d = jobs[(m, probe)].result()
                self.details.append(d)
                if d["error"]:
                    fails.append(f"{os.path.basename(m)}: {d['error']}")
                sites += d["sites"]
                kernels += len(d["kernels"])
                plain += d["sites"] == 0
                used[d["ptxas"]] += 1
            note = f", {plain} without a match" if plain else ""
            self.t.check(None, f"{probe}: bpf2ptx inject, then ptxas ({len(self.modules)} "
                         f"modules, {kernels} kernels, {sites} sites{note}; "
                         f"{', '.join(f'{k} x{n}' for k, n in sorted(used.items()))})",
                         fails, [])

    def inject_one(self, i, module, probe):
        """`bpf2ptx inject` of module `i` with `probe`, then ptxas: a dict for the report."""
        out_dir = os.path.join(self.dir, f"inject-{probe}")
        os.makedirs(out_dir, exist_ok=True)
        out = os.path.join(out_dir, f"{i:03d}.{os.path.basename(module)}")
        sites = out + ".sites.json"
        d = {"module": module, "probe": probe, "out": out, "sites": 0, "kernels": set(),
             "ptxas": "-", "error": None}
        r = subprocess.run([BPF2PTX, "inject", PROBES[probe], "--into", module, "-o", out,
                            "--allow-no-match", "--sites", sites], capture_output=True,
                           text=True, timeout=300)
        if r.returncode != 0:
            d["error"] = "inject: " + " / ".join(r.stderr.strip().splitlines()[-3:])
            return d
        if os.path.exists(sites):
            with open(sites) as f:
                s = json.load(f)
            d["sites"], d["kernels"] = len(s), {x["kernel"] for x in s}
        ok, used, msg = self.ptxas.assemble(out)
        d["ptxas"] = used
        if not ok:
            plain_ok, _, _ = self.ptxas.assemble(module)
            d["error"] = (f"ptxas: {msg}" + ("" if plain_ok else
                                               " (the module without probes fails too)"))
        return d

    def kernels_with_sites(self, probe=RUN_PROBE):
        return sorted(set().union(*[d["kernels"] for d in self.details if d["probe"] == probe]))

    # ------------------------------------------------------------ results

    def traced(self, cmd, tag, env):
        """`bpf2ptx trace --format json` with mem_traffic on `cmd`; (Ran, snapshot path)."""
        snaps = self.log(f"{tag}.jsonl")
        return sh([BPF2PTX, "trace", "--format", "json", "--interval", "10s", "-o", snaps,
                   PROBES[RUN_PROBE], "--"] + cmd, self.log(tag), env=env), snaps

    def check_runs(self, plain, traced, want_kernels):
        self.t.check("run", f"exit codes, untraced ({plain.secs:.0f} s) and under bpf2ptx "
                     f"trace ({traced.secs:.0f} s)", (plain.rc, traced.rc), (0, 0))
        if plain.rc != 0:
            print(f"{self.name} untraced: {plain.tail(20)}", file=sys.stderr)
        if traced.rc != 0:
            print(f"{self.name} traced: {traced.tail(20)}", file=sys.stderr)
        got, want = set(instrumented(traced.err)), set(want_kernels)
        self.t.check("run", f"kernels bpf2ptx trace instrumented ('probes in' lines): "
                     f"{len(got & want)} of {len(want)}, none else",
                     {"missing": sorted(want - got), "else": sorted(got - want)},
                     {"missing": [], "else": []})

    def check_checksums(self, plain, traced, what, agrees):
        """The app's output under trace is its untraced output, and that has checksum lines
        ("... checksum ...") that each end with `agrees` (the app's own comparison with a
        reference); `what` says what they check."""
        lines = [x for x in plain.out.splitlines() if " checksum " in x]
        self.t.check("run", f"outputs unchanged ({len(lines)} checksums {what})",
                     traced.out == plain.out and len(lines) > 0
                     and all(x.endswith(agrees) for x in lines), True)
        if traced.out != plain.out:
            print(f"{self.name} untraced:\n{plain.out}\n{self.name} traced:\n{traced.out}",
                  file=sys.stderr)

    def check_probe_ran(self, snaps):
        lines = []
        if os.path.exists(snaps):
            with open(snaps) as f:
                lines = [json.loads(x) for x in f if x.lstrip().startswith("{")]
        procs = last_snapshots(lines)
        total = sum(sum(p["maps"].get("traffic_bytes", {}).values()) for p in procs.values())
        failures = [f for p in procs.values() for f in p["failures"]]
        self.t.check("run", f"the probe ran: {RUN_PROBE}'s bytes ({total}) not 0, no map "
                     "failure", (total > 0, failures), (True, []))


def same_arrays(a_path, b_path):
    """Names of the arrays of two .npz files that differ in shape, type or any byte (a
    missing file or array included); [] when equal bit for bit."""
    import numpy as np
    if not (os.path.exists(a_path) and os.path.exists(b_path)):
        return [f"missing {p}" for p in (a_path, b_path) if not os.path.exists(p)]
    a, b = np.load(a_path), np.load(b_path)
    diff = sorted(set(a.files) ^ set(b.files))
    for k in sorted(set(a.files) & set(b.files)):
        x, y = a[k], b[k]
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            diff.append(k)
    return diff


def extract_ptx(part, binary, tag):
    """The PTX modules of an executable or library (`cuobjdump -xptx all`), as files."""
    cuobjdump = tool("cuobjdump", tool("nvcc"))
    if not cuobjdump:
        part.t.check(tag, "cuobjdump found (PATH, CUDA_HOME/bin, /usr/local/cuda/bin)",
                     False, True)
        return []
    d = os.path.join(part.dir, f"ptx-{tag}")
    os.makedirs(d, exist_ok=True)
    r = sh([cuobjdump, "-xptx", "all", binary], part.log(f"cuobjdump-{tag}"), cwd=d,
           timeout=60)
    files = sorted(glob.glob(os.path.join(d, "*.ptx")))
    part.t.check(tag, f"PTX modules in {os.path.basename(binary)} (cuobjdump -xptx all): "
                 f"{len(files)}", (r.rc, len(files) > 0), (0, True))
    return files


# ---------------------------------------------------------------- cub

def part_cub(p):
    nvcc = tool("nvcc")
    if not nvcc:
        return p.skip_part("nvcc not found (PATH, CUDA_HOME/bin, /usr/local/cuda/bin)")
    exe = os.path.join(p.dir, "corpus_cub")
    b = sh([nvcc, "-O2", "-gencode", "arch=compute_90,code=compute_90", CUB_SRC, "-o", exe],
           p.log("nvcc"))
    missing = re.search(r"^.*(?:cub|thrust)/\S+\.cuh?.*(?:No such file|cannot open).*$",
                        b.err, re.M)
    if b.rc != 0 and missing:
        return p.skip_part(f"CUB's or Thrust's headers are not with this nvcc ({nvcc}): "
                           f"{missing.group(0).strip()}")
    p.versions = (re.findall(r"release [\d.]+, V[\d.]+",
                             subprocess.run([nvcc, "--version"], capture_output=True,
                                            text=True).stdout) or ["nvcc ?"])[0]
    p.t.check("build", f"nvcc -gencode arch=compute_90,code=compute_90 ({b.secs:.0f} s)",
              b.rc, 0)
    if b.rc != 0:
        print(b.tail(30), file=sys.stderr)
        return
    p.modules = extract_ptx(p, exe, "build")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(p.dir, "xdg"))
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        plain = ex.submit(sh, [exe], p.log("plain"), env)
        traced = ex.submit(p.traced, [exe], "traced", env)
        p.check_modules()
        plain, (traced, snaps) = plain.result(), traced.result()
    p.check_runs(plain, traced, p.kernels_with_sites())
    p.check_checksums(plain, traced, "of CUB's and Thrust's results, each agreeing with the CPU",
                      "agrees 1")
    p.check_probe_ran(snaps)


# ---------------------------------------------------------------- triton

def part_triton(p):
    if not have("torch"):
        return p.skip_part("PyTorch is not installed (PyTorch with Triton 3.x is needed)")
    if not have("triton"):
        return p.skip_part("Triton is not installed")
    dump = os.path.join(p.dir, "dump")
    xdg = os.path.join(p.dir, "xdg")
    env = dict(os.environ, TRITON_ALWAYS_COMPILE="1", XDG_CACHE_HOME=xdg)
    plain_env = dict(env, TRITON_CACHE_DIR=os.path.join(p.dir, "cache-plain"),
                     TRITON_KERNEL_DUMP="1", TRITON_DUMP_DIR=dump)
    # Trace gives the traced run Triton and TorchInductor caches of its own, under
    # XDG_CACHE_HOME (specs/trace.md, "Triton"), where cached_ptx reads them.
    traced_env = env
    a, b = os.path.join(p.dir, "plain.npz"), os.path.join(p.dir, "traced.npz")
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        plain = ex.submit(sh, [sys.executable, TRITON_APP, a], p.log("plain"), plain_env)
        traced = ex.submit(p.traced, [sys.executable, TRITON_APP, b], "traced", traced_env)
        plain, (traced, snaps) = plain.result(), traced.result()
    if plain.rc == 3:
        return p.skip_part(plain.last_line())
    p.versions = (re.findall(r"^torch \S+ triton \S+", plain.out, re.M) or [""])[0]
    p.modules = sorted(glob.glob(os.path.join(dump, "**", "*.ptx"), recursive=True))
    names = sorted(os.path.basename(m)[:-len(".ptx")] for m in p.modules)
    p.t.check("dump", "kernels in Triton's dump of the untraced run", names,
              sorted(TRITON_KERNELS))
    p.check_modules()
    p.check_runs(plain, traced, TRITON_KERNELS)
    cached = cached_ptx(os.path.join(xdg, "bpf2ptx", "triton"))
    p.t.check("run", "Triton assembled the instrumented PTX (the traced run's Triton cache)",
              {k: cached.get(k) for k in TRITON_KERNELS}, {k: True for k in TRITON_KERNELS})
    p.t.check("run", "outputs unchanged (add, softmax, matmul, attention: bit for bit)",
              same_arrays(a, b), [])
    p.check_probe_ran(snaps)


# ---------------------------------------------------------------- xla

def replay_files(modules):
    """XLA's dumped PTX files by module (`module_NNNN`), and the ones to feed back: XLA
    takes for a module the first --xla_gpu_ptx_file whose name starts with the module's
    `module_NNNN.NAME.`, so a module with several PTX files (shards, should
    --xla_gpu_force_compilation_parallelism=1 be refused) gets only its main one,
    `module_NNNN.NAME.ptx`, or none."""
    groups = {}
    for m in modules:
        base = os.path.basename(m)
        k = re.match(r"(module_\d+)\.", base)
        groups.setdefault(k.group(1) if k else base, []).append(base)
    main = set()
    for files in groups.values():
        one = files if len(files) == 1 else \
            [f for f in files if re.fullmatch(r"module_\d+\.[^.]+\.ptx", f)]
        main.update(one[:1] if len(one) == 1 else [])
    return groups, main


def xla_env(flags, extra=None):
    """The environment of a JAX run: XLA_FLAGS `flags`, no compilation cache (JAX's own nor
    XLA's kernel and autotuning caches through it), and `extra`."""
    return dict(os.environ, XLA_FLAGS=" ".join(flags), XLA_PYTHON_CLIENT_PREALLOCATE="false",
                JAX_ENABLE_COMPILATION_CACHE="false",
                JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES="none", **(extra or {}))


def unknown_flag(r):
    return r.rc != 0 and re.search(r"[Uu]nknown flags? in XLA_FLAGS|[Uu]nknown flag", r.err)


def refused(r):
    """The flag names (without values) of XLA's `Unknown flags in XLA_FLAGS: ...`, an empty
    set where the message does not list them, None where the run was not refused so."""
    if not unknown_flag(r):
        return None
    m = re.search(r"[Uu]nknown flags? in XLA_FLAGS: ?(.*)", r.err)
    return {t.split("=")[0] for t in m.group(1).split()} if m else set()


def xla_run(p, tag, out, flags, optional=(), env=None, clear=()):
    """tests/gpu/trace/corpus_jax.py OUT with XLA_FLAGS `flags` and `optional`: an optional
    flag that XLA refuses as unknown is dropped (all of them where its message names none)
    and the run repeated (`TAG-again`, ...), the folders `clear` emptied first. (Ran, the
    optional flags kept, those dropped)."""
    optional, dropped = list(optional), []
    for n in range(len(optional) + 1):
        r = sh([sys.executable, JAX_APP, out], p.log(tag + ("-again" if n else "")
                                                   + (str(n) if n > 1 else "")),
               xla_env(list(flags) + optional, env))
        names = refused(r)
        if names is None or not optional:
            break
        gone = [f for f in optional if f.split("=")[0] in names] or optional
        dropped += gone
        optional = [f for f in optional if f not in gone]
        for d in clear:
            shutil.rmtree(d, ignore_errors=True)
    return r, optional, dropped


# ------------------------------------------------ xla: a ptxas wrapper

def real_cuda_root():
    """The CUDA root whose ptxas the wrapper runs: CUDA_ROOT (which JAX hands XLA as
    --xla_gpu_cuda_data_dir), that of `ptxas` on PATH (its real path's parent's parent),
    CUDA_HOME, /usr/local/cuda, the nvidia pip packages' (nvidia/cuda_nvcc, nvidia/cu13,
    ...); the first with an executable bin/ptxas, or None."""
    found = [os.environ.get("CUDA_ROOT")]
    which = shutil.which("ptxas")
    if which:
        found.append(os.path.dirname(os.path.dirname(os.path.realpath(which))))
    found += [os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    for base in sys.path:
        found += sorted(glob.glob(os.path.join(base, "nvidia", "*", "bin", "ptxas")))
    for c in found:
        if c and c.endswith(os.path.join("bin", "ptxas")):
            c = os.path.dirname(os.path.dirname(c))
        ptxas = c and os.path.join(c, "bin", "ptxas")
        if ptxas and os.path.isfile(ptxas) and os.access(ptxas, os.X_OK):
            return os.path.realpath(c)
    return None


def ptxas_root(work, real):
    """WORK/cuda-root: a CUDA root whose entries are links to those of `real` (nvvm/ for
    libdevice, include, lib64, bin/'s other tools), but whose bin/ptxas runs
    tests/gpu/trace/xla_ptxas_wrapper.py (with this Python); its path."""
    root = os.path.join(work, "cuda-root")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "bin"))
    for e in os.listdir(real):
        if e != "bin":
            os.symlink(os.path.join(real, e), os.path.join(root, e))
    for e in os.listdir(os.path.join(real, "bin")):
        if e != "ptxas":
            os.symlink(os.path.join(real, "bin", e), os.path.join(root, "bin", e))
    launcher = os.path.join(root, "bin", "ptxas")
    with open(launcher, "w") as f:
        f.write("#!/bin/sh\n# tests/gpu/trace/xla_ptxas_wrapper.py, for tests/gpu/corpus.py\n"
                f"exec {shlex.quote(sys.executable)} -I -S {shlex.quote(XLA_WRAPPER)} \"$@\"\n")
    os.chmod(launcher, 0o755)
    return root


def wrapper_env(root, real, capture, replay=None):
    """The environment that makes XLA run the wrapper of `root`: CUDA_ROOT (from which JAX
    sets --xla_gpu_cuda_data_dir itself, over XLA_FLAGS') and PATH first; the wrapper's
    real ptxas, its capture folder and, for a replay, its replay folder."""
    env = {"CUDA_ROOT": root, "PATH": os.path.join(root, "bin") + os.pathsep
           + os.environ.get("PATH", ""), "BPF2PTX_REAL_PTXAS": os.path.join(real, "bin", "ptxas"),
           "BPF2PTX_XLA_CAPTURE": capture}
    if replay:
        env["BPF2PTX_XLA_REPLAY"] = replay
    return env


def wrapper_calls(capture):
    """The wrapper's log in `capture`: a dict per ptxas call (argv, input, sha256,
    replayed)."""
    calls = []
    log = os.path.join(capture, "calls.jsonl")
    if os.path.exists(log):
        with open(log, errors="replace") as f:
            for line in f:
                try:
                    calls.append(json.loads(line))
                except ValueError:
                    pass
    return calls


def captured_modules(capture, calls, into):
    """The PTX the wrapper captured, in the order XLA assembled it, copied into `into` as
    ENTRY.SHA.ptx (ENTRY: its first kernel's name, SHA: the first 12 digits of its
    sha256, the name of its capture); {path: sha256}."""
    shas = list(dict.fromkeys(c["sha256"] for c in calls if c.get("sha256")))
    shas += sorted(os.path.basename(f)[:-len(".ptx")]
                   for f in glob.glob(os.path.join(capture, "*.ptx"))
                   if os.path.basename(f)[:-len(".ptx")] not in shas)
    os.makedirs(into, exist_ok=True)
    out = {}
    for sha in shas:
        src = os.path.join(capture, f"{sha}.ptx")
        if not os.path.exists(src):
            continue
        with open(src, errors="replace") as f:
            m = re.search(r"\.entry\s+([\w$]+)", f.read())
        name = re.sub(r"[^\w.-]", "_", m.group(1))[:60] if m else "no-entry"
        dest = os.path.join(into, f"{name}.{sha[:12]}.ptx")
        shutil.copy(src, dest)
        out[dest] = sha
    return out


# ------------------------------------------------ xla: the part

def part_xla(p):
    if not have("jax"):
        return p.skip_part("JAX is not installed")
    d1, cap1 = os.path.join(p.dir, "dump"), os.path.join(p.dir, "ptxas-capture")
    a = os.path.join(p.dir, "plain.npz")
    real = real_cuda_root()
    root = ptxas_root(p.dir, real) if real else None
    fixed = [f"--xla_dump_to={d1}"] + ([f"--xla_gpu_cuda_data_dir={root}"] if root else [])
    optional = XLA_OPTIONAL + (XLA_SUBPROCESS if root else [])
    env = wrapper_env(root, real, cap1) if root else None
    plain, kept, dropped = xla_run(p, "plain", a, fixed, optional, env, [d1, cap1])
    if plain.rc == 3:
        return p.skip_part(plain.last_line())
    wrapped = f"the ptxas wrapper over {real}/bin/ptxas" if root else \
        "no ptxas wrapper (no ptxas found: PATH, CUDA_ROOT, CUDA_HOME, /usr/local/cuda, " \
        "the nvidia pip packages)"
    p.versions = (re.findall(r"^jax \S+ jaxlib \S+", plain.out, re.M) or [""])[0] + \
        (f" (without {', '.join(dropped)}: XLA_FLAGS refused them)" if dropped else "") + \
        f"; {wrapped}"
    p.t.check("dump", f"JAX run with XLA_FLAGS=--xla_dump_to"
              f"{' and the ptxas wrapper' if root else ''} ({plain.secs:.0f} s)", plain.rc, 0)
    if plain.rc != 0:
        print(plain.tail(30), file=sys.stderr)
        return
    dumped = sorted(glob.glob(os.path.join(d1, "**", "*.ptx"), recursive=True))
    calls = wrapper_calls(cap1) if root else []
    shas = {}
    if dumped:
        p.modules, source = dumped, "XLA's dump"
    else:
        shas = captured_modules(cap1, calls, os.path.join(p.dir, "ptx-captured"))
        p.modules, source = list(shas), "the ptxas wrapper"
    p.versions += f"; the corpus from {source} ({len(p.modules)} modules)"
    flags = " ".join(fixed + kept)
    with_input = sum(1 for c in calls if c.get("sha256"))
    if p.modules:
        got = True
    elif not root:
        got = f"none: no .ptx in XLA's dump, and {wrapped} (XLA_FLAGS={flags})"
    else:
        how = f"ran {len(calls)} time{'s' if len(calls) > 1 else ''}, {with_input} with a " \
            "PTX input" if calls else "was never invoked"
        why = "" if with_input else \
            " (XLA assembled its PTX in-process: libnvptxcompiler or libnvjitlink)"
        got = (f"none: no .ptx in XLA's dump, and the ptxas wrapper {how}{why}; "
               + (f"XLA_FLAGS refused {', '.join(dropped)}; " if dropped else "")
               + f"XLA_FLAGS={flags}")
    through = len({c["sha256"] for c in calls if c.get("sha256")})
    p.t.check("dump", f"PTX modules XLA compiled (the corpus from {source}: {len(dumped)} "
              f".ptx in its dump, {through} through the ptxas wrapper in {len(calls)} calls)",
              got, True)
    if not dumped:
        listing = sorted(os.path.relpath(os.path.join(r, f), d1)
                         for r, _, fs in os.walk(d1) for f in fs)
        # By kind (the part of the name after the module's own: `.ptx`, `.ll`,
        # `thunk_sequence.txt`, ...), then the names that hold "ptx" or "ll": where this
        # XLA put its kernels' code, if anywhere (on 2026-12-07 the first 40 names of 290
        # said nothing).
        kinds = collections.Counter(f.split(".", 2)[-1] for f in listing)
        print(f"xla: no .ptx in {d1}; {len(listing)} files by kind: {dict(kinds)}\n"
              f"names with ptx/ll/cubin: {[f for f in listing if re.search(r'ptx|[.]ll|cubin', f)][:40]}\n"
              f"ptxas wrapper: {len(calls)} calls, {with_input} with an input, "
              f"{len(shas)} modules captured; XLA_FLAGS={flags}\n"
              f"{plain.tail(15)}", file=sys.stderr)
    p.check_modules()
    if dumped:
        not_used = replay_ptx_files(p, a, fixed[1:] + kept, root and wrapper_env(
            root, real, os.path.join(p.dir, "ptxas-capture-replay")))
        if not not_used:
            return
        # --xla_gpu_ptx_file gave no result: the wrapper replays the dumped modules that it
        # captured as they are (the same sha256), where it did.
        what, why, short = not_used
        captured = {os.path.basename(f)[:-len(".ptx")]
                    for f in glob.glob(os.path.join(cap1, "*.ptx"))}
        shas = {m: s for m, s in ((m, sha256_of(m)) for m in dumped) if s in captured}
        if not shas:
            return p.t.skip("run", what, why + (
                "; nor did the ptxas wrapper capture any of the dumped modules" if root else ""))
        print(f"xla: {why}; the ptxas wrapper replays the {len(shas)} dumped modules it "
              "captured", file=sys.stderr)
        return replay_wrapped(p, a, fixed[1:] + kept, root, real, shas, "replay-wrapper",
                              f"; {short}")
    if shas:
        replay_wrapped(p, a, fixed[1:] + kept, root, real, shas)


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def replay_ptx_files(p, a, flags, env):
    """Results from XLA's dump: the instrumented modules fed back with --xla_gpu_ptx_file,
    `flags` (the first run's, but its dump) and `env` (the first run's wrapper, if any).
    None, or where this XLA has no such option or it took effect for no module, (the
    results row, why not, that in short) for part_xla to try the wrapper."""
    d2, b = os.path.join(p.dir, "dump-replay"), os.path.join(p.dir, "replay.npz")
    replay = os.path.join(p.dir, "replay-ptx")
    os.makedirs(replay, exist_ok=True)
    groups, main = replay_files(p.modules)
    probed = {}
    for d in p.details:
        base = os.path.basename(d["module"])
        if d["probe"] == RUN_PROBE and not d["error"] and d["sites"] and base in main:
            shutil.copy(d["out"], os.path.join(replay, base))
            probed[base] = os.path.join(replay, base)
    several = sum(len(f) > 1 for f in groups.values())
    note = f"; {several} modules with several PTX files, only a main one fed back" \
        if several else ""
    what = "outputs unchanged with the instrumented PTX (--xla_gpu_ptx_file; every array " \
           "bit for bit)"
    if not probed:
        return p.t.check("run", what, f"no instrumented module to feed back{note}", "modules")
    flags = [f"--xla_dump_to={d2}"] + list(flags) + [f"--xla_gpu_ptx_file={f}"
                                                     for f in probed.values()]
    r, _, _ = xla_run(p, "replay", b, flags, env=env)
    if r.rc != 0 and re.search(r"[Uu]nknown flag.*xla_gpu_ptx_file|xla_gpu_ptx_file.*[Uu]nknown",
                               r.err):
        return (what, "this jaxlib has no --xla_gpu_ptx_file (XLA_FLAGS refused it: "
                f"{r.tail(2)}); its PTX is checked by ptxas only",
                "XLA_FLAGS refused --xla_gpu_ptx_file")
    p.t.check("run", f"JAX run with --xla_gpu_ptx_file x{len(probed)} ({r.secs:.0f} s; "
              f"{len(groups)} modules dumped{note})", r.rc, 0)
    if r.rc != 0:
        print(r.tail(30), file=sys.stderr)
        return
    used, unused = [], []
    for base in sorted(probed):
        f = os.path.join(d2, base)
        holds = False
        if os.path.exists(f):
            with open(f, errors="replace") as fh:
                holds = MARK in fh.read()
        (used if holds else unused).append(base)
    if not used:
        second = sorted(os.path.basename(f) for f in glob.glob(os.path.join(d2, "*.ptx")))
        same = second == sorted(os.path.basename(m) for m in p.modules)
        return (what, "--xla_gpu_ptx_file took effect for no module: no PTX of the second "
                f"dump ({len(second)} files, named {'as' if same else 'unlike'} the first's) "
                "holds the probes, so XLA assembled its own; its PTX is checked by ptxas only",
                f"--xla_gpu_ptx_file x{len(probed)} took effect for no module")
    p.t.check("run", "modules XLA assembled from the instrumented PTX (its second dump holds "
              f"the probes; {len(used)} of {len(probed)})", unused, [])
    p.t.check("run", what, same_arrays(a, b), [])


def replay_wrapped(p, a, flags, root, real, shas, tag="replay", note=""):
    """Results from the wrapper's capture: each instrumented module in the replay folder
    under its original's sha256 (`shas`: {module: sha256}), so that the wrapper hands it to
    ptxas in the original's place when XLA compiles the same PTX again (`flags`: the first
    run's, but its dump; `tag` names the run's files, `note` ends its row)."""
    b, replay = os.path.join(p.dir, f"{tag}.npz"), os.path.join(p.dir, f"{tag}-sha")
    cap2 = os.path.join(p.dir, f"ptxas-capture-{tag}")
    os.makedirs(replay, exist_ok=True)
    probed = {}
    for d in p.details:
        sha = shas.get(d["module"])
        if d["probe"] == RUN_PROBE and not d["error"] and d["sites"] and sha:
            shutil.copy(d["out"], os.path.join(replay, f"{sha}.ptx"))
            probed[sha] = os.path.basename(d["module"])
    what = "outputs unchanged with the instrumented PTX (the ptxas wrapper assembled it in " \
           "place of XLA's; every array bit for bit)"
    if not probed:
        return p.t.check("run", what, "no instrumented module to replay", "modules")
    flags = [f"--xla_dump_to={os.path.join(p.dir, 'dump-' + tag)}"] + list(flags)
    r, _, _ = xla_run(p, tag, b, flags, env=wrapper_env(root, real, cap2, replay))
    p.t.check("run", f"JAX run replaying {len(probed)} instrumented modules through the "
              f"ptxas wrapper ({r.secs:.0f} s{note})", r.rc, 0)
    if r.rc != 0:
        print(r.tail(30), file=sys.stderr)
        return
    calls = wrapper_calls(cap2)
    again = {c["sha256"] for c in calls if c.get("sha256")}
    replayed = {c["sha256"] for c in calls if c.get("replayed")}
    first = set(shas.values())
    # The replay run compiles what the first did (the same flags, no cache): where it
    # does not, the modules it compiled otherwise are said, not failed, as long as one
    # instrumented module was assembled.
    same = f"the replay run compiled {len(first & again)} of the first run's {len(first)} " \
           f"modules again" + (f", {len(again - first)} others" if again - first else "")
    p.t.check("run", f"modules XLA assembled from the instrumented PTX (the wrapper's log: "
              f"{len(replayed)} of {len(probed)} instrumented modules in place of XLA's; "
              f"{same})", len(replayed) > 0 or f"none: {same}", True)
    if replayed:
        p.t.check("run", what, same_arrays(a, b), [])


# ---------------------------------------------------------------- torch

def part_torch(p):
    if not have("torch"):
        return p.skip_part("PyTorch is not installed")
    if not tool("nvcc"):
        return p.skip_part("nvcc not found (PATH, CUDA_HOME/bin, /usr/local/cuda/bin): the "
                           "extension cannot be built")
    import trace_torch
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(p.dir, "xdg"))
    ext = trace_torch.build_extension(p.t, p.dir, env)
    if ext is None:
        return
    so = sorted(glob.glob(os.path.join(ext, "trace_torch_ext*.so")))
    p.modules = extract_ptx(p, so[0], "build") if so else []
    cmd = [sys.executable, TORCH_APP, "run", ext]
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        plain = ex.submit(sh, cmd, p.log("plain"), env)
        traced = ex.submit(p.traced, cmd, "traced", env)
        p.check_modules()
        plain, (traced, snaps) = plain.result(), traced.result()
    p.check_runs(plain, traced, trace_torch.EXT_KERNELS)
    p.check_checksums(plain, traced, "each agreeing with torch and the CPU", "agrees True")
    p.check_probe_ran(snaps)


# ---------------------------------------------------------------- coverage and report

def coverage(parts, table):
    """A row per part (every opcode has a row of the table) and the report's lines."""
    rows, per_row = [], {}
    for p in parts:
        if not p.modules:
            continue
        counts = Counter()
        for m in p.modules:
            with open(m, errors="replace") as f:
                counts.update(opcodes(f.read()))
        unknown, mem = [], 0
        for op, n in counts.items():
            r = table.row(op)
            if r is None:
                unknown.append(op)
                continue
            mem += n if r["mem"] else 0
            e = per_row.setdefault(r["opcode"], {"row": r, "by": Counter(), "ops": set()})
            e["by"][p.name] += n
            e["ops"].add(op)
        rows.append((p, f"opcodes: each has a row of specs/abi.md's coverage table "
                     f"({len(counts)} distinct in {sum(counts.values())} instructions, "
                     f"{mem} at gpu/mem attach points)", sorted(unknown)))
    lines = ["## Opcodes of the corpus by row of specs/abi.md's coverage table", "",
             "| row | op | gpu/mem | " + " | ".join(PARTS) + " | as written (some) |",
             "|---|---|---|" + "---|" * len(PARTS) + "---|"]
    for name, e in sorted(per_row.items(), key=lambda x: x[1]["row"]["op"]):
        r = e["row"]
        ops = sorted(e["ops"])
        shown = ", ".join(f"`{o}`" for o in ops[:4]) + (f" (+{len(ops) - 4})" if len(ops) > 4
                                                          else "")
        lines.append(f"| `{name}` | {r['op']} | {'yes' if r['mem'] else 'no: ' + r['why']} | "
                     + " | ".join(str(e["by"].get(x, "")) for x in PARTS) + f" | {shown} |")
    return rows, lines


def module_lines(parts):
    lines = ["## Modules", "", "| part | module | kernels | instructions | "
             + " | ".join(f"{p} sites" for p in PROBES) + " | ptxas |",
             "|---|---|---|---|" + "---|" * len(PROBES) + "---|"]
    for p in parts:
        for m in p.modules:
            ds = {d["probe"]: d for d in p.details if d["module"] == m}
            with open(m, errors="replace") as f:
                text = f.read()
            n = sum(opcodes(text).values())
            k = len(re.findall(r"\.entry\s+\S+?\s*\(", text))
            sites = [str(ds[q]["sites"]) if q in ds and not ds[q]["error"] else "FAIL"
                     for q in PROBES]
            used = sorted({ds[q]["ptxas"] for q in ds})
            lines.append(f"| {p.name} | {os.path.basename(m)} | {k} | {n} | "
                         + " | ".join(sites) + f" | {', '.join(used)} |")
    return lines


def archive(parts):
    """With CORPUS_ARCHIVE=FILE.tar.gz, the corpus's modules (as generated, without
    probes) into FILE, `PART/NNN.NAME.ptx`: tests/tests/corpus_cpu.rs reads them on
    another machine (BPF2PTX_CORPUS_DIR)."""
    path = os.environ.get("CORPUS_ARCHIVE")
    if not path:
        return
    import tarfile
    with tarfile.open(path, "w:gz") as tar:
        for p in parts:
            for i, m in enumerate(p.modules):
                tar.add(m, arcname=f"{p.name}/{i:03d}.{os.path.basename(m)}")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else None
    os.chdir(REPO)
    work = tempfile.mkdtemp(prefix="bpf2ptx-corpus-")
    print(f"work directory {work}", flush=True)
    ptxas = Ptxas()
    print(f"ptxas: {ptxas.describe()}", flush=True)
    table = CoverageTable()
    t = Table("part")
    pool = concurrent.futures.ThreadPoolExecutor(max(4, (os.cpu_count() or 8) // 2))
    parts = [Part(n, work, ptxas, pool) for n in PARTS]
    runners = {"cub": part_cub, "triton": part_triton, "xla": part_xla, "torch": part_torch}
    t0 = time.time()

    def head():
        h = [f"# Real-world PTX corpus (issue 18, Build 4): {', '.join(PARTS)}", "",
             f"`BPF2PTX={BPF2PTX} python3 tests/gpu/corpus.py`, {time.time() - t0:.0f} s; "
             f"work directory `{work}` (the corpus, the instrumented modules, each command's "
             "output); probes: " + ", ".join(f"`examples/probes/{q}.bpf.o`" for q in PROBES)
             + f" (results under `{RUN_PROBE}`)", "", f"ptxas: {ptxas.describe()}", ""]
        h += [f"- {p.name}: {p.versions}" for p in parts if p.versions]
        return h

    def report(stopped=False):
        for p in parts:
            t.rows += p.t.rows
            t.failed += p.t.failed
            t.skipped += p.t.skipped
        rows, cov = coverage(parts, table)
        for p, what, unknown in rows:
            p_rows = PartTable(p.name)
            p_rows.check(None, what, unknown, [])
            t.rows += p_rows.rows
            t.failed += p_rows.failed
        if stopped:
            t.check("run", "finished within the time limit", "stopped (SIGTERM)", "finished")
        if all(p.skipped for p in parts):
            skip("every part: " + "; ".join(f"{p.name}: {p.skipped}" for p in parts), out)
        archive(parts)
        t.finish(head=head(), tail=module_lines(parts) + [""] + cov)

    def on_term(signum, _frame):
        signal.signal(signum, signal.SIG_DFL)
        stop_all()
        report(stopped=True)
    signal.signal(signal.SIGTERM, on_term)

    def run(p):
        try:
            runners[p.name](p)
        except Exception as e:  # noqa: BLE001  a part's crash is its failure, not the others'
            import traceback
            traceback.print_exc()
            p.t.check("run", "the part ran to its end", f"{type(e).__name__}: {e}", "no error")

    threads = [threading.Thread(target=run, args=(p,), daemon=True) for p in parts]
    for th in threads:
        th.start()
    for th in threads:
        while th.is_alive():
            th.join(0.5)
    report()


if __name__ == "__main__":
    main()
