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

Prints the results table, writes it to OUT.md, exits 1 when a check fails (77, skipped,
without PyTorch, Triton or a CUDA device). Each phase runs in its own process (so Triton
compiles afresh with its environment); the work directory is kept and printed.
"""
import argparse
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from triton_common import (MEM_MAPS, MEM_PROBE, TC_PROBE, Rows, bpf2ptx_triton,  # noqa: E402
                           child_args, finish, finish_on_sigterm, median_ms, phase, read_map,
                           require_triton, traffic, traffic_table, triton_env)

# The kernel's configuration: Triton's tutorial 03 (matrix multiplication), its first
# Hopper configuration, fixed (no autotuning, so the model knows the tiles).
BM, BN, BK, GROUP_M, WARPS, STAGES = 128, 256, 64, 8, 8, 3


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
    triton_env(a.cache, a.dump, a.override)
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
    out["ms"] = median_ms(launch, a.reps)
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


# ---------------------------------------------------------------- parent: the phases

def run(work, tag, size, reps, **kw):
    """One child run of the matmul (triton_common.phase)."""
    return phase(__file__, work, tag, ["--size", str(size), "--reps", str(reps)], **kw)


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
            _, _, out = run(work, "ncu", size, 0, wrap=wrap)
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
    child_args(ap)
    a = ap.parse_args()
    if a.child:
        return child(a)
    if not a.out:
        ap.error("the results file (OUT.md) is required")
    require_triton(a.out)
    import torch
    size = a.size
    if size % BM or size % BN or size % BK:
        ap.error(f"--size must be a multiple of {BM}, {BN} and {BK}")
    work = tempfile.mkdtemp(prefix="triton_attach-")
    dump = os.path.join(work, "dump")
    print(f"work directory {work}", flush=True)

    rows = Rows()
    row = rows.row
    finish_on_sigterm(a.out, rows, ["# Triton matmul under bpf2ptx triton (stopped)", ""])

    # 1. The uninstrumented kernel, dumping its PTX.
    plain, plain_c, _ = run(work, "plain", size, a.reps, dump=dump)
    major = int(plain["triton"].split(".")[0])
    row("Triton 3.0 or newer", ">= 3.0", plain["triton"], major >= 3)
    # 2. Instrument and run with each probe.
    notes = []
    notes.append(bpf2ptx_triton(MEM_PROBE, dump, os.path.join(work, "ov-mem"), MEM_MAPS))
    notes.append(bpf2ptx_triton(TC_PROBE, dump, os.path.join(work, "ov-tc"),
                                ["tc_per_warp", "tc_by_op"]))
    mem, mem_c, _ = run(work, "mem", size, a.reps, override=os.path.join(work, "ov-mem"),
                        maps=MEM_MAPS)
    tc, tc_c, _ = run(work, "tc", size, a.reps, override=os.path.join(work, "ov-tc"),
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
    tr = traffic(mem["maps"]["traffic_bytes"], mem["maps"]["traffic_count"])
    global_read, global_write, cp_shared = tr["global_read"], tr["global_write"], tr["cp_shared"]
    shared_read, shared_write = tr["shared_read"], tr["shared_write"]
    # Tensor (TMA) loads say no bytes themselves: their mbarriers' transaction counts do.
    tma, tx = tr["tma"], tr["tx"]
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
            rows.skip("ncu counters", why)

    lines = [f"# Triton matmul under bpf2ptx triton ({plain['device']}, Triton {plain['triton']}, "
             f"PyTorch {plain['torch']})", "",
             f"M = N = K = {size}, fp16, tiles {BM}x{BN}x{BK}, {WARPS} warps, {STAGES} stages, "
             f"{plain['grid']} programs; static: {plain['cp_async_static']} cp.async, "
             f"{plain['ldmatrix_static']} ldmatrix, {plain['wgmma_static']} wgmma.mma_async, "
             f"{plain['mma_static']} mma.sync", ""] + rows.markdown()
    lines += ["", "Bytes by instruction (mem_traffic probe, every thread):", ""]
    lines += traffic_table(tr["table"])
    if ncu:
        lines += ["", "Nsight Compute, uninstrumented launch (cache traffic: bounds, not the "
                  "instructions' bytes):", "", "| metric | value |", "|---|---|"]
        for m, v in ncu.items():
            lines.append(f"| {m} | {v:.0f} |")
    lines += ["", "bpf2ptx triton:", "", "```"] + [n.strip() for n in notes] + ["```", ""]
    return finish(a.out, lines, rows)


if __name__ == "__main__":
    sys.exit(main() or 0)
