#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Issue 18 on the GPU, memory accounting for Triton's fused softmax (tutorial 02): the
kernel instrumented through Triton's dump and override directories by `bpf2ptx triton`
with examples/probes/mem_traffic.bpf.o, its global bytes compared with a CPU model of
each launch, its output compared bit for bit with the uninstrumented kernel's.

The kernel is the tutorial's (a persistent loop over rows, `tl.range(..., num_stages)`, a
masked load with `other=-inf`, max and sum reductions, a masked store) in a fixed
configuration: 8 warps, 4 stages (the tutorial's choice on Hopper, whose shared memory is
above 200 KB), 512 programs, BLOCK_SIZE the next power of two of the row length. Three
shapes, each its own specialisation (its own compiled kernel, module and maps):

  1823 x 781   rows and length not multiples of 16: scalar 4-byte accesses, masked tail
  4096 x 1008  multiples of 16: 16-byte vector accesses, masked tail (16 of 1024 lanes)
  2048 x 4096  a full block: every lane in bounds, 16 elements per thread

Model, per launch of R rows of C fp32:

  global bytes read    = 4 R C
  global bytes written = 4 R C

"Read" counts every byte the kernel's instructions read from global memory by their own
address: `ld.global` sizes, and for `cp.async` (what Triton's pipeliner turns the load
into when num_stages > 1: Triton 3.9 does, seen in its sm_90 PTX) the src-size operand,
which is what the instruction reads (the rest of cp-size it zero-fills). Lanes whose mask
is false read nothing, and the probe counts nothing for them, whichever way Triton
compiles the mask:

  - a predicated `@%p ld.global` / `@%p st.global`: the probe runs under the
    instruction's guard (specs/abi.md, "Instruction sites": the lanes whose predicate is
    false branch past the whole site), so it runs only in the lanes that access memory;
  - `cp.async [dst], [src], cp-size, src-size` with src-size = mask ? cp-size : 0 (how
    Triton lowers a masked async copy, also for the pipeline's prologue iterations past
    the program's last row): the probe reads the src-size register, 0 for those lanes.

Both forms are exact, so the model needs no knowledge of which one this Triton chose.
The shapes keep BLOCK_SIZE (1024 or 4096) at or above the 256 threads x 4 elements of
the layout, so no element is held by two threads: a tensor smaller than its layout is
replicated across threads, and each copy would load it (Triton masks duplicated stores,
not loads). The shared-memory side of cp.async (cp-size, written whatever src-size says:
zero fill) is at least the bytes read; it is printed beside the pipelined estimate
(rows + stages - 1 iterations per program, BLOCK_SIZE x 4 bytes each), not checked.
Reductions move data through shared memory (st/ld.shared, ldmatrix), reported only.

Each kernel's maps are read after its first launch; the output saved is a fresh launch's
(zeroed first), compared with torch.equal. Also reported: the largest difference from
torch.softmax (informational: tl.exp is approximate), and the time with the probe.

    BPF2PTX=gpu-carry/bpf2ptx python3 tests/gpu/triton_softmax.py OUT.md

Needs PyTorch with Triton 3.x and a Hopper GPU. Exit 1 when a check fails, 77 (skipped)
without PyTorch, Triton or a CUDA device; the work directory (dump, override, caches,
results) is kept and printed.
"""
import argparse
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from triton_common import (MEM_MAPS, MEM_PROBE, Rows, bpf2ptx_triton, child_args,  # noqa: E402
                           finish, finish_on_sigterm, median_ms, phase, read_map, require_triton,
                           traffic, traffic_table, triton_env)

WARPS, STAGES, PROGRAMS = 8, 4, 512
SHAPES = [(1823, 781), (4096, 1008), (2048, 4096)]

try:
    import triton
    import triton.language as tl
except ImportError:  # the parent reports it from the child's failure
    triton = None

if triton is not None:

    @triton.jit
    def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows,
                       n_cols, BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
        row_start = tl.program_id(0)
        row_step = tl.num_programs(0)
        for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
            row_start_ptr = input_ptr + row_idx * input_row_stride
            col_offsets = tl.arange(0, BLOCK_SIZE)
            input_ptrs = row_start_ptr + col_offsets
            mask = col_offsets < n_cols
            row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
            row_minus_max = row - tl.max(row, axis=0)
            numerator = tl.exp(row_minus_max)
            denominator = tl.sum(numerator, axis=0)
            softmax_output = numerator / denominator
            output_row_start_ptr = output_ptr + row_idx * output_row_stride
            output_ptrs = output_row_start_ptr + col_offsets
            tl.store(output_ptrs, softmax_output, mask=mask)


def block_size(cols):
    return 1 << (cols - 1).bit_length()


def static_counts(ptx):
    """What the compiled kernel's PTX holds, to say which form Triton chose."""
    def n(pattern):
        return len(re.findall(pattern, ptx))
    return {"cp.async": n(r"\bcp\.async\.c[ag]\.shared\.global"),
            "ld.global": n(r"\bld\.global\."), "st.global": n(r"\bst\.global\."),
            "predicated ld/st.global": n(r"@!?%p\d+\s+(?:ld|st)\.global\."),
            "ld.shared + ldmatrix": n(r"\bld\.shared\.|\bldmatrix\.")}


# ---------------------------------------------------------------- child: one Triton run

def child(a):
    """Runs every shape once under the phase's Triton environment, reads the maps of each
    compiled kernel's module after its first launch, times it, saves the outputs."""
    triton_env(a.cache, a.dump, a.override)
    if triton is None:
        sys.exit("Triton is not installed (PyTorch with Triton 3.x is needed)")
    import torch

    out = {"triton": triton.__version__, "torch": torch.__version__,
           "device": torch.cuda.get_device_name(), "shapes": []}
    results = {}
    seen = {}  # module -> its maps at the last reading (two shapes could share a kernel)
    gen = torch.Generator(device="cuda").manual_seed(0)
    for rows, cols in SHAPES:
        x = torch.randn((rows, cols), device="cuda", dtype=torch.float32, generator=gen)
        y = torch.empty_like(x)
        bs = block_size(cols)

        def launch():
            return softmax_kernel[(PROGRAMS, 1, 1)](
                y, x, x.stride(0), y.stride(0), rows, cols, BLOCK_SIZE=bs,
                num_stages=STAGES, num_warps=WARPS)

        compiled = launch()
        torch.cuda.synchronize()
        ptx = compiled.asm.get("ptx", "") if hasattr(compiled, "asm") else ""
        shape = {"rows": rows, "cols": cols, "block": bs,
                 "instrumented": "// ---- bpf2ptx probes ----" in ptx,
                 "static": static_counts(ptx), "n_regs": getattr(compiled, "n_regs", None),
                 "n_spills": getattr(compiled, "n_spills", None), "maps": {},
                 "max_diff": (y - torch.softmax(x, dim=1)).abs().max().item()}
        for name in a.maps.split(",") if a.maps else []:
            now = read_map(compiled.module, name)
            before = seen.get((compiled.module, name), [0] * len(now))
            shape["maps"][name] = [v - b for v, b in zip(now, before)]
            seen[(compiled.module, name)] = now
        shape["ms"] = median_ms(launch, a.reps)
        y.zero_()
        launch()
        torch.cuda.synchronize()
        results[f"{rows}x{cols}"] = y.cpu()
        # The launches after the reading added to the maps: a later shape that runs the
        # same kernel (it should not: each shape is its own specialisation) subtracts them.
        for name in a.maps.split(",") if a.maps else []:
            seen[(compiled.module, name)] = read_map(compiled.module, name)
        out["shapes"].append(shape)
    torch.save(results, a.result)
    with open(a.json, "w") as f:
        json.dump(out, f)


# ---------------------------------------------------------------- parent

def run(work, tag, reps, **kw):
    return phase(__file__, work, tag, ["--reps", str(reps)], **kw)


def pipelined_shared(rows, cols):
    """cp.async's shared-side bytes if every program issues rows + STAGES - 1 iterations
    of BLOCK_SIZE x 4 bytes (its rows plus the prologue's copies past its last row): an
    estimate printed beside the probe's figure."""
    per = [rows // PROGRAMS + (p < rows % PROGRAMS) for p in range(PROGRAMS)]
    return sum(n + STAGES - 1 for n in per) * block_size(cols) * 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--reps", type=int, default=20)
    child_args(ap)
    a = ap.parse_args()
    if a.child:
        return child(a)
    if not a.out:
        ap.error("the results file (OUT.md) is required")
    require_triton(a.out)
    import torch
    work = tempfile.mkdtemp(prefix="triton_softmax-")
    dump, ov = os.path.join(work, "dump"), os.path.join(work, "ov-mem")
    print(f"work directory {work}", flush=True)
    rows = Rows()
    finish_on_sigterm(a.out, rows, ["# Triton softmax under bpf2ptx triton (stopped)", ""])

    plain, plain_y, _ = run(work, "plain", a.reps, dump=dump)
    major = int(plain["triton"].split(".")[0])
    rows.row("Triton 3.0 or newer", ">= 3.0", plain["triton"], major >= 3)
    note = bpf2ptx_triton(MEM_PROBE, dump, ov, MEM_MAPS)
    mem, mem_y, _ = run(work, "mem", a.reps, override=ov, maps=MEM_MAPS)
    ref, got = torch.load(plain_y), torch.load(mem_y)
    detail = []
    for p, m in zip(plain["shapes"], mem["shapes"]):
        r, c = m["rows"], m["cols"]
        tag = f"{r} x {c}"
        rows.row(f"{tag}: Triton assembled the instrumented PTX", "yes", str(m["instrumented"]),
                 m["instrumented"])
        same = torch.equal(ref[f"{r}x{c}"], got[f"{r}x{c}"])
        rows.row(f"{tag}: output unchanged", "bit for bit", "equal" if same else "DIFFERS", same)
        t = traffic(m["maps"]["traffic_bytes"], m["maps"]["traffic_count"])
        st = p["static"]
        form = (f"{st['cp.async']} cp.async" if st["cp.async"] else
                f"{st['ld.global']} ld.global ({st['predicated ld/st.global']} ld/st predicated)")
        rows.row(f"{tag}: global bytes read (cp.async src-size + ld.global)", 4 * r * c,
                 t["global_read"], t["global_read"] == 4 * r * c, f"static: {form}")
        rows.row(f"{tag}: global bytes written (st.global)", 4 * r * c, t["global_write"],
                 t["global_write"] == 4 * r * c, f"static: {st['st.global']} st.global")
        if st["cp.async"] or t["cp_shared"]:
            rows.row(f"{tag}: shared bytes written by cp.async (cp-size)", f">= {4 * r * c}",
                     t["cp_shared"], t["cp_shared"] >= 4 * r * c,
                     f"pipelined estimate {pipelined_shared(r, c)} (rows + {STAGES - 1} "
                     "iterations per program)")
        rows.row(f"{tag}: bytes at generic addresses", "-", t["generic"], True,
                 "Triton names every space; not in the totals")
        rows.row(f"{tag}: shared bytes read / written (reductions, staging)", "-",
                 f"{t['shared_read']} / {t['shared_write']}", True)
        rows.row(f"{tag}: time with mem_traffic / plain (median of {a.reps})", "-",
                 f"{m['ms']:.3f} / {p['ms']:.3f} ms = {m['ms'] / p['ms']:.2f}x", True,
                 f"{m['n_regs']} registers (plain {p['n_regs']}), {m['n_spills']} spills; "
                 f"max |y - torch.softmax| {p['max_diff']:.2e}")
        detail += ["", f"{tag} (BLOCK_SIZE {m['block']}), bytes by instruction:", ""]
        detail += traffic_table(t["table"])
    lines = [f"# Triton softmax under bpf2ptx triton ({plain['device']}, Triton "
             f"{plain['triton']}, PyTorch {plain['torch']})", "",
             f"fp32, {WARPS} warps, {STAGES} stages, {PROGRAMS} programs; model: 4 x rows x "
             "cols bytes read and written", ""] + rows.markdown() + detail
    lines += ["", "bpf2ptx triton:", "", "```", note.strip(), "```", ""]
    return finish(a.out, lines, rows)


if __name__ == "__main__":
    sys.exit(main() or 0)
