#!/usr/bin/env python3
"""Issue 18 on the GPU: a Triton matmul (sm_90: cp.async, ldmatrix, wgmma) instrumented
through Triton's own dump and override directories by `bpf2ptx triton`, with

  - examples/probes/mem_traffic.bpf.o: every byte the kernel's data-moving instructions move,
    by instruction, side (addr / addr2) and state space;
  - examples/probes/tensor_core_count.bpf.o: tensor-core instructions per warp
    (gpu/insn.warp/*/wgmma, .../mma, .../wmma);

and compared with a model of the launch computed from its sizes:

  global bytes read  = 2 bytes x (M*K*(N/BN) + K*N*(M/BM))  (every A and B tile once per
                       program; fp16; no masking since the sizes are multiples)
  global bytes written = 2 bytes x M*N                        (the fp16 C tile)
  shared bytes written by cp.async >= global bytes read     (the pipeline's copies past
                       the last iteration have src-size 0: they zero-fill, reading nothing)
  tensor-core instructions per warp = M*N*K / (warps x MACs per warp-instruction), MACs from
                       the instruction's shape in the kernel's PTX (wgmma mMnNkK: M*N*K/4 per
                       warp of its warpgroup; mma mMnNkK: M*N*K)

The instrumented C must equal the uninstrumented C bit for bit. Optionally (--ncu) Nsight
Compute's DRAM / L2 / shared-memory counters for the uninstrumented launch are put beside
the probe's bytes (they count cache traffic, so they bound rather than equal the model).

Run on the GPU machine from the repository root (PyTorch with Triton 3.x, a Hopper GPU):

    BPF2PTX=gpu-carry/bpf2ptx python3 tests/gpu/triton_attach.py OUT.md [--size 4096] [--ncu]

Prints the results table, writes it to OUT.md, exits 1 when a check fails. Each phase runs
in its own process (so Triton compiles afresh with its environment); the work directory is
kept and printed.
"""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BPF2PTX = os.environ.get("BPF2PTX", os.path.join(REPO, "target/release/bpf2ptx"))
MEM_PROBE = os.path.join(REPO, "examples/probes/mem_traffic.bpf.o")
TC_PROBE = os.path.join(REPO, "examples/probes/tensor_core_count.bpf.o")

# The kernel's configuration: Triton's tutorial 03 (matrix multiplication), its first
# Hopper configuration, fixed (no autotuning, so the model knows the tiles).
BM, BN, BK, GROUP_M, WARPS, STAGES = 128, 256, 64, 8, 8, 3

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


# ---------------------------------------------------------------- the kernel

# Triton's tutorial 03 kernel, at module level so Triton finds `tl` among its globals.
# Importing Triton reads none of the variables the child sets: compile() reads them.
try:
    import triton
    import triton.language as tl
except ImportError:  # the parent reports it from the child's failure
    triton = None

if triton is not None:

    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                      stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                      BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr):
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
        offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        c = accumulator.to(tl.float16)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, c, mask=c_mask)


# ---------------------------------------------------------------- child: one Triton run

def child(a):
    """Runs the matmul once in this process under the Triton environment the parent
    chose, reads the probe maps from the compiled kernel's module, times it, saves C."""
    os.environ["TRITON_CACHE_DIR"] = a.cache
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    if a.dump:
        os.environ["TRITON_KERNEL_DUMP"] = "1"
        os.environ["TRITON_DUMP_DIR"] = a.dump
    if a.override:
        os.environ["TRITON_KERNEL_OVERRIDE"] = "1"
        os.environ["TRITON_OVERRIDE_DIR"] = a.override
    if triton is None:
        sys.exit("Triton is not installed (PyTorch with Triton 3.x is needed)")
    import torch

    M = N = K = a.size
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn((M, K), device="cuda", dtype=torch.float16, generator=gen)
    y = torch.randn((K, N), device="cuda", dtype=torch.float16, generator=gen)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)

    def launch():
        return matmul_kernel[grid](x, y, c, M, N, K, x.stride(0), x.stride(1), y.stride(0),
                                   y.stride(1), c.stride(0), c.stride(1), BLOCK_SIZE_M=BM,
                                   BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=GROUP_M,
                                   num_warps=WARPS, num_stages=STAGES)

    compiled = launch()
    torch.cuda.synchronize()
    ptx = compiled.asm.get("ptx", "") if hasattr(compiled, "asm") else ""
    out = {"triton": triton.__version__, "torch": torch.__version__,
           "device": torch.cuda.get_device_name(), "grid": grid[0], "num_warps": WARPS,
           "instrumented": "// ---- bpf2ptx probes ----" in ptx,
           "n_regs": getattr(compiled, "n_regs", None),
           "n_spills": getattr(compiled, "n_spills", None),
           "wgmma_static": len(re.findall(r"wgmma\.mma_async\.", ptx)),
           "mma_static": len(re.findall(r"\bmma\.sync\.", ptx)),
           "cp_async_static": len(re.findall(r"\bcp\.async\.c[ag]\.", ptx)),
           "ldmatrix_static": len(re.findall(r"\bldmatrix\.", ptx)),
           "shape": tc_shape(ptx), "maps": {}}
    for name in a.maps.split(",") if a.maps else []:
        out["maps"][name] = read_map(compiled.module, name)
    # Time it (after the maps were read: the probes keep adding).
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(a.reps):
        start.record()
        launch()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    out["ms"] = times[len(times) // 2] if times else None
    c.zero_()
    launch()
    torch.cuda.synchronize()
    torch.save(c.cpu(), a.result)
    with open(a.json, "w") as f:
        json.dump(out, f)


def tc_shape(ptx):
    """(kind, m, n, k) of the kernel's tensor-core instruction, from its PTX."""
    m = re.search(r"wgmma\.mma_async\.sync\.aligned\.m(\d+)n(\d+)k(\d+)", ptx)
    if m:
        return ["wgmma"] + [int(v) for v in m.groups()]
    m = re.search(r"\bmma\.sync\.aligned\.m(\d+)n(\d+)k(\d+)", ptx)
    if m:
        return ["mma"] + [int(v) for v in m.groups()]
    return None


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


# ---------------------------------------------------------------- parent: the phases

def phase(work, tag, size, reps, dump=None, override=None, maps=None, wrap=None):
    """One child run; returns its JSON and the path of its C."""
    cache = os.path.join(work, f"cache-{tag}")
    j, res = os.path.join(work, f"{tag}.json"), os.path.join(work, f"{tag}.pt")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--cache", cache, "--json", j,
           "--result", res, "--size", str(size), "--reps", str(reps)]
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


def bpf2ptx_triton(probe, dump, override, maps):
    cmd = [BPF2PTX, "triton", probe, "--dump-dir", dump, "--override-dir", override]
    for m in maps:
        cmd += ["--map", f"{m}=unsharded"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return r.stderr


def ncu_counters(work, size):
    """Nsight Compute's counters for the uninstrumented launch, or why there are none."""
    metrics = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
               "smsp__sass_inst_executed_op_ldgsts.sum",
               "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
               "sm__inst_executed_pipe_tensor_op_gmma.sum"]
    err = "ncu failed"
    for ms in (metrics, metrics[:2]):
        wrap = ["ncu", "--target-processes", "all", "-k", "regex:matmul_kernel", "-c", "1",
                "--csv", "--metrics", ",".join(ms)]
        try:
            _, _, out = phase(work, "ncu", size, 0, wrap=wrap)
        except (RuntimeError, FileNotFoundError) as e:
            err = str(e)
            continue
        vals = {}
        for line in out.splitlines():
            cells = [c.strip('"') for c in line.split('","')]
            for m in ms:
                if m in cells:
                    try:
                        vals[m] = float(cells[-1].strip('"').replace(",", ""))
                    except ValueError:
                        pass
        if vals:
            return vals, None
        err = "no metric in ncu's output"
    return {}, (err.splitlines() or ["ncu failed"])[0][:200]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--ncu", action="store_true")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--cache")
    ap.add_argument("--json")
    ap.add_argument("--result")
    ap.add_argument("--dump")
    ap.add_argument("--override")
    ap.add_argument("--maps")
    a = ap.parse_args()
    if a.child:
        return child(a)
    if not a.out:
        ap.error("the results file (OUT.md) is required")
    import torch
    size = a.size
    if size % BM or size % BN or size % BK:
        ap.error(f"--size must be a multiple of {BM}, {BN} and {BK}")
    work = tempfile.mkdtemp(prefix="triton_attach-")
    dump = os.path.join(work, "dump")
    print(f"work directory {work}", flush=True)

    rows, failed = [], []

    def row(what, model, probe, ok, note=""):
        rows.append((what, model, probe, "PASS" if ok else "FAIL", note))
        if not ok:
            failed.append(what)

    # 1. The uninstrumented kernel, dumping its PTX.
    plain, plain_c, _ = phase(work, "plain", size, a.reps, dump=dump)
    major = int(plain["triton"].split(".")[0])
    row("Triton 3.0 or newer", ">= 3.0", plain["triton"], major >= 3)
    # 2. Instrument and run with each probe.
    notes = []
    notes.append(bpf2ptx_triton(MEM_PROBE, dump, os.path.join(work, "ov-mem"),
                                ["traffic_bytes", "traffic_count"]))
    notes.append(bpf2ptx_triton(TC_PROBE, dump, os.path.join(work, "ov-tc"),
                                ["tc_per_warp", "tc_by_op"]))
    mem, mem_c, _ = phase(work, "mem", size, a.reps, override=os.path.join(work, "ov-mem"),
                          maps=["traffic_bytes", "traffic_count"])
    tc, tc_c, _ = phase(work, "tc", size, a.reps, override=os.path.join(work, "ov-tc"),
                        maps=["tc_per_warp", "tc_by_op"])
    row("Triton assembled the instrumented PTX (mem_traffic)", "yes", str(mem["instrumented"]),
        mem["instrumented"])
    row("Triton assembled the instrumented PTX (tensor_core_count)", "yes",
        str(tc["instrumented"]), tc["instrumented"])
    ref = torch.load(plain_c)
    for tag, path in (("mem_traffic", mem_c), ("tensor_core_count", tc_c)):
        same = torch.equal(ref, torch.load(path))
        row(f"C unchanged under {tag}", "bit for bit", "equal" if same else "DIFFERS", same)

    # 3. Bytes against the model.
    M = N = K = size
    programs = (M // BM) * (N // BN)
    g_read = 2 * programs * (K // BK) * (BM * BK + BK * BN)
    g_write = 2 * M * N
    by = mem["maps"]["traffic_bytes"]
    cnt = mem["maps"]["traffic_count"]
    table = []
    for key, v in enumerate(by):
        if v or cnt[key]:
            op, side, space = key >> 4, key >> 3 & 1, key & 7
            where = "tx bytes" if key & 15 == 15 else f"{'addr2' if side else 'addr'} {SPACES[space]}"
            table.append((OPS.get(op, str(op)), where, cnt[key], v))
    def total(pred):
        return sum(v for key, v in enumerate(by) if pred(key >> 4, key >> 3 & 1, key & 7, key))
    global_read = total(lambda op, side, sp, k: k & 15 != 15 and sp == 1 and
                        ((side == 0 and op in (1, 2, 20, 30, 35, 39, 52, 8)) or
                         (side == 1 and op in ())))
    global_write = total(lambda op, side, sp, k: k & 15 != 15 and sp == 1 and
                         ((side == 0 and op in (3, 21, 20, 53, 9)) or side == 1))
    cp_shared = total(lambda op, side, sp, k: op == 30 and side == 1)
    shared_read = total(lambda op, side, sp, k: side == 0 and sp == 2 and op in (1, 50))
    shared_write = total(lambda op, side, sp, k: (side == 0 and sp == 2 and op in (3, 51)) or
                         (side == 1 and sp == 2))
    # Tensor (TMA) loads say no bytes themselves: their mbarriers' transaction counts do.
    tma = sum(cnt[39 << 4 | sp] for sp in range(8))
    tx = by[74 << 4 | 15]
    what = "global bytes read (cp.async src-size + ld.global"
    if tma:
        global_read += tx
        what += " + TMA bytes from mbarrier expect_tx"
    row(what + ")", g_read, global_read, global_read == g_read)
    row("global bytes written (st.global)", g_write, global_write, global_write == g_write)
    row("shared bytes written by cp.async (cp-size)", f">= {g_read}", cp_shared,
        cp_shared >= g_read, "equal plus the pipeline's zero-filling copies past the last "
        "iteration (src-size 0: they read nothing)")
    row("shared bytes read (ldmatrix, ld.shared)", "-", shared_read, True,
        "wgmma reads its shared operands through descriptors: not a memory site")
    row("shared bytes written (all)", "-", shared_write, True)

    # 4. Tensor-core instructions per warp.
    shape = tc["shape"]
    warps = tc["grid"] * WARPS
    per_warp = tc["maps"]["tc_per_warp"]
    if shape:
        kind, m, n, k = shape
        macs = m * n * k // 4 if kind == "wgmma" else m * n * k
        want = M * N * K // (warps * macs)
        got = per_warp[:warps]
        ok = all(v == want for v in got) and not any(per_warp[warps:])
        row(f"{kind} m{m}n{n}k{k} per warp ({warps} warps)", want,
            f"min {min(got)} max {max(got)}", ok)
        row("tensor-core instructions, all warps", want * warps, sum(per_warp),
            sum(per_warp) == want * warps)
    else:
        row("tensor-core instruction in the kernel", "wgmma or mma", "none", False)

    # 5. Cost.
    for tag, r in (("mem_traffic", mem), ("tensor_core_count", tc)):
        row(f"time with {tag} / plain (median of {a.reps})", "-",
            f"{r['ms']:.3f} / {plain['ms']:.3f} ms = {r['ms'] / plain['ms']:.2f}x", True,
            f"{r['n_regs']} registers (plain {plain['n_regs']}), {r['n_spills']} spills")

    # 6. Nsight Compute, optional.
    ncu = {}
    if a.ncu:
        ncu, why = ncu_counters(work, size)
        if why:
            rows.append(("ncu counters", "-", "-", "SKIP", why))

    lines = [f"# Triton matmul under bpf2ptx triton ({plain['device']}, Triton {plain['triton']}, "
             f"PyTorch {plain['torch']})", "",
             f"M = N = K = {size}, fp16, tiles {BM}x{BN}x{BK}, {WARPS} warps, {STAGES} stages, "
             f"{plain['grid']} programs; static: {plain['cp_async_static']} cp.async, "
             f"{plain['ldmatrix_static']} ldmatrix, {plain['wgmma_static']} wgmma.mma_async, "
             f"{plain['mma_static']} mma.sync", "",
             "| check | model | probe | result | note |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    lines += ["", "Bytes by instruction (mem_traffic probe, every thread):", "",
              "| instruction | side / space | accesses | bytes |", "|---|---|---|---|"]
    for t in sorted(table, key=lambda t: -t[3]):
        lines.append(f"| {t[0]} | {t[1]} | {t[2]} | {t[3]} |")
    if ncu:
        lines += ["", "Nsight Compute, uninstrumented launch (cache traffic: bounds, not the "
                  "instructions' bytes):", "", "| metric | value |", "|---|---|"]
        for m, v in ncu.items():
            lines.append(f"| {m} | {v:.0f} |")
    lines += ["", "bpf2ptx triton:", "", "```"] + [n.strip() for n in notes] + ["```", ""]
    text = "\n".join(lines)
    print(text)
    with open(a.out, "w") as f:
        f.write(text)
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main() or 0)
