# SPDX-License-Identifier: MIT OR Apache-2.0
"""What the Triton checks of issue 18 share (tests/gpu/triton_attach.py, the matmul;
tests/gpu/triton_softmax.py, the fused softmax).

Each check runs its kernel in child processes of its own script (`--child`), one per
phase, so that Triton compiles afresh under the phase's environment: its own cache,
TRITON_ALWAYS_COMPILE, and a dump directory (the uninstrumented run) or an override
directory (the runs with probes). `bpf2ptx triton` (file mode) instruments the dumped PTX
into the override directory. A child reads the probes' maps from the compiled kernel's
module (cuModuleGetGlobal of `bpf2ptx_map_NAME`, specs/abi.md "Maps (device runtime)").
`traffic()` sums examples/probes/mem_traffic.bpf.o's maps by direction and space.
"""
import ctypes
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from checks import skip  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
BPF2PTX = os.environ.get("BPF2PTX", os.path.join(REPO, "target/release/bpf2ptx"))
MEM_PROBE = os.path.join(REPO, "examples/probes/mem_traffic.bpf.o")
TC_PROBE = os.path.join(REPO, "examples/probes/tensor_core_count.bpf.o")
# mem_traffic's two maps.
MEM_MAPS = ["traffic_bytes", "traffic_count"]

# BPF2PTX_OP_* of the opcode table (compiler/backend/src/inject/opcodes.rs), for naming.
OPS = {1: "ld", 2: "ldu", 3: "st", 4: "st.async", 5: "st.bulk", 6: "prefetch",
       7: "prefetchu", 8: "multimem.ld_reduce", 9: "multimem.st", 20: "atom", 21: "red",
       22: "red.async", 23: "multimem.red", 30: "cp.async", 35: "cp.async.bulk",
       38: "cp.async.bulk.prefetch", 39: "cp.async.bulk.tensor",
       40: "cp.async.bulk.prefetch.tensor", 41: "cp.reduce.async.bulk",
       42: "cp.reduce.async.bulk.tensor", 43: "tensormap.cp_fenceproxy", 50: "ldmatrix",
       51: "stmatrix", 52: "wmma.load", 53: "wmma.store", 60: "mma", 61: "wmma.mma",
       62: "wgmma.mma_async", 66: "tcgen05.mma", 74: "mbarrier"}
SPACES = ["generic", "global", "shared", "local", "shared::cluster", "const", "param", "?"]


# ---------------------------------------------------------------- in the child

def triton_env(cache, dump=None, override=None):
    """The phase's Triton environment, set before the first compile (Triton reads these
    variables when it compiles, not when it is imported)."""
    os.environ["TRITON_CACHE_DIR"] = cache
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    if dump:
        os.environ["TRITON_KERNEL_DUMP"] = "1"
        os.environ["TRITON_DUMP_DIR"] = dump
    if override:
        os.environ["TRITON_KERNEL_OVERRIDE"] = "1"
        os.environ["TRITON_OVERRIDE_DIR"] = override


def read_map(module, name):
    """An array map's u64 values (first 8 bytes of each entry), replicas summed, from the
    descriptor bpf2ptx_map_NAME of the module (specs/abi.md, "Maps (device runtime)")."""
    cuda = ctypes.CDLL("libcuda.so.1")
    dptr, size = ctypes.c_uint64(), ctypes.c_size_t()
    rc = cuda.cuModuleGetGlobal_v2(ctypes.byref(dptr), ctypes.byref(size),
                                   ctypes.c_void_p(module), f"bpf2ptx_map_{name}".encode())
    if rc != 0:
        raise RuntimeError(f"cuModuleGetGlobal(bpf2ptx_map_{name}): {rc}")
    desc = (ctypes.c_uint64 * 8)()
    check(cuda.cuMemcpyDtoH_v2(desc, dptr, ctypes.c_size_t(64)), "descriptor")
    entries, stride = desc[2] & 0xFFFFFFFF, desc[2] >> 32
    replicas = max(int(desc[4]), 1) if desc[5] else 1
    step = int(desc[5]) if replicas > 1 else entries * stride
    raw = (ctypes.c_uint64 * (replicas * step // 8))()
    check(cuda.cuMemcpyDtoH_v2(raw, ctypes.c_uint64(desc[3]),
                               ctypes.c_size_t(replicas * step)), "map data")
    vals = [0] * entries
    for r in range(replicas):
        base = r * step // 8
        for e in range(entries):
            vals[e] += raw[base + e * stride // 8]
    return vals


def check(rc, what):
    if rc != 0:
        raise RuntimeError(f"cuMemcpyDtoH ({what}): {rc}")


# ---------------------------------------------------------------- in the parent

# What `bpf2ptx inject` writes after the application's own PTX: a text holding it
# carries the probes (Triton's cache keeps the PTX it assembled beside the cubin).
MARK = "// ---- bpf2ptx probes ----"


def cached_ptx(cache):
    """Per kernel, whether the PTX Triton assembled (its cache: `<key>/<kernel>.ptx`)
    holds the probes; a kernel compiled more than once is True only if every copy does."""
    out = {}
    for root, _, files in os.walk(cache):
        for f in files:
            if f.endswith(".ptx"):
                with open(os.path.join(root, f), errors="replace") as fh:
                    probed = MARK in fh.read()
                k = f[:-len(".ptx")]
                out[k] = out.get(k, True) and probed
    return out


def median_ms(launch, reps):
    """The median of `reps` launches of `launch()`, CUDA events around each (ms; None for
    no launch)."""
    import torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        launch()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2] if times else None


def require_triton(out):
    """Skips the check (checks.skip: exit 77, `out` says why) where it cannot run: no
    PyTorch, no Triton, or no CUDA device PyTorch sees. A Triton older than 3.0 runs, and
    its row says it is too old."""
    try:
        import torch
    except ImportError:
        skip("PyTorch is not installed (PyTorch with CUDA and Triton 3.x is needed)", out)
    try:
        import triton  # noqa: F401
    except ImportError:
        skip(f"Triton is not installed (PyTorch {torch.__version__} without it)", out)
    if not torch.cuda.is_available():
        skip(f"PyTorch {torch.__version__} sees no CUDA device", out)


def phase(script, work, tag, args, dump=None, override=None, maps=None, wrap=None):
    """Runs `script --child` once (the phase `tag`) and returns its JSON, the path of the
    result it saved and its stdout. `args`: the script's own options."""
    cache = os.path.join(work, f"cache-{tag}")
    j, res = os.path.join(work, f"{tag}.json"), os.path.join(work, f"{tag}.pt")
    cmd = [sys.executable, os.path.abspath(script), "--child", "--cache", cache, "--json", j,
           "--result", res] + list(args)
    if dump:
        cmd += ["--dump", dump]
    if override:
        cmd += ["--override", override]
    if maps:
        cmd += ["--maps", ",".join(maps)]
    r = subprocess.run((wrap or []) + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"phase {tag}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    with open(j) as f:
        return json.load(f), res, r.stdout


def child_args(ap):
    """The options every check's child takes (phase() passes them)."""
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--cache")
    ap.add_argument("--json")
    ap.add_argument("--result")
    ap.add_argument("--dump")
    ap.add_argument("--override")
    ap.add_argument("--maps")


def bpf2ptx_triton(probe, dump, override, maps):
    """`bpf2ptx triton PROBE --dump-dir DUMP --override-dir OVERRIDE`, each map unsharded
    (one copy the child reads); its stderr (what it instrumented)."""
    cmd = [BPF2PTX, "triton", probe, "--dump-dir", dump, "--override-dir", override]
    for m in maps:
        cmd += ["--map", f"{m}=unsharded"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return r.stderr


def traffic(by, cnt):
    """mem_traffic's maps (traffic_bytes, traffic_count; key op << 4 | side << 3 | space,
    op << 4 | 15 an mbarrier's transaction bytes) summed: every non-zero key as a table row
    (instruction, side / space, accesses, bytes) and the totals the checks compare.

    - global_read: bytes read from global memory by the instruction's own address (ld, ldu,
      atom, cp.async's src-size, bulk and tensor copies' sources, wmma.load,
      multimem.ld_reduce);
    - global_write: bytes written there (st, red, atom, wmma.store, multimem.st, and every
      copy's destination on the global side);
    - cp_shared: cp.async's shared-side bytes (cp-size: written whatever src-size says);
    - shared_read / shared_write: ld / ldmatrix, st / stmatrix and copy destinations in
      shared memory;
    - generic: bytes at generic addresses (not told apart by space: 0 for Triton's code);
    - tma: accesses of tensor (TMA) copies, whose bytes are their mbarriers' transaction
      counts (tx)."""
    def total(pred):
        return sum(v for key, v in enumerate(by) if pred(key >> 4, key >> 3 & 1, key & 7, key))
    table = []
    for key, v in enumerate(by):
        if v or cnt[key]:
            op, side, space = key >> 4, key >> 3 & 1, key & 7
            where = "tx bytes" if key & 15 == 15 else f"{'addr2' if side else 'addr'} {SPACES[space]}"
            table.append((OPS.get(op, str(op)), where, cnt[key], v))
    t = {"table": table}
    t["global_read"] = total(lambda op, side, sp, k: k & 15 != 15 and sp == 1 and side == 0
                             and op in (1, 2, 20, 30, 35, 39, 52, 8))
    t["global_write"] = total(lambda op, side, sp, k: k & 15 != 15 and sp == 1 and
                              ((side == 0 and op in (3, 21, 20, 53, 9)) or side == 1))
    t["cp_shared"] = total(lambda op, side, sp, k: op == 30 and side == 1)
    t["shared_read"] = total(lambda op, side, sp, k: side == 0 and sp == 2 and op in (1, 50))
    t["shared_write"] = total(lambda op, side, sp, k: (side == 0 and sp == 2 and op in (3, 51))
                              or (side == 1 and sp == 2))
    t["generic"] = total(lambda op, side, sp, k: k & 15 != 15 and sp == 0)
    t["tma"] = sum(cnt[39 << 4 | sp] for sp in range(8))
    t["tx"] = by[74 << 4 | 15]
    return t


def traffic_table(table):
    """traffic()'s rows as Markdown, largest first."""
    lines = ["| instruction | side / space | accesses | bytes |", "|---|---|---|---|"]
    for t in sorted(table, key=lambda t: -t[3]):
        lines.append(f"| {t[0]} | {t[1]} | {t[2]} | {t[3]} |")
    return lines


class Rows:
    """The checks' table: `| check | model | probe | result | note |`."""

    def __init__(self):
        self.rows, self.failed = [], []

    def row(self, what, model, probe, ok, note=""):
        self.rows.append((what, model, probe, "PASS" if ok else "FAIL", note))
        if not ok:
            self.failed.append(what)

    def skip(self, what, note):
        self.rows.append((what, "-", "-", "SKIP", note))

    def markdown(self):
        lines = ["| check | model | probe | result | note |", "|---|---|---|---|---|"]
        return lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in self.rows]


def finish_on_sigterm(out, rows, head):
    """On SIGTERM (the step's `timeout` in tests/gpu/open_issues.sh), a failing row saying
    so and finish() with `head` (Markdown lines) and the rows so far."""
    import signal

    def stop(signum, _frame):
        signal.signal(signum, signal.SIG_DFL)
        rows.row("finished within the time limit", "finished", "stopped (SIGTERM)", False)
        sys.exit(finish(out, list(head) + rows.markdown(), rows))
    signal.signal(signal.SIGTERM, stop)


def finish(out, lines, rows):
    """Prints the report, writes it to `out`, returns the exit status (1 on a failure)."""
    text = "\n".join(lines)
    print(text)
    with open(out, "w") as f:
        f.write(text)
    if rows.failed:
        print(f"FAILED: {', '.join(rows.failed)}", file=sys.stderr)
        return 1
    return 0
