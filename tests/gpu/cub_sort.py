#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Issue 18 on the GPU, memory accounting for a CUB radix sort: tests/gpu/trace/cub_sort.cu
(cub::DeviceRadixSort::SortKeys on 32-bit keys, the DoubleBuffer form) built PTX only
(`-gencode arch=compute_90,code=compute_90`), run untraced and under `bpf2ptx trace`
with examples/probes/mem_traffic.bpf.o (bytes by instruction and space) and with
examples/probes/mem_kernel.bpf.o (bytes per kernel by direction, space and memory
ordering); the sorted keys of every traced run must equal the untraced run's, byte for
byte, and the bytes must equal a CPU model of the launches CUB made.

The model. On sm_90 CUB (CCCL 3.0, cub/device/dispatch/dispatch_radix_sort.cuh,
InvokeOnesweep; Adinets and Merrill, "Onesweep", 2022) sorts more than one tile of keys
with three kernels: a histogram kernel (every key read once; each block adds its shared
histograms to the global bins with one atomicAdd per pass and digit it saw), an
exclusive-sum kernel (one block per pass scans its RADIX_DIGITS bins in place), and one
onesweep kernel per 8-bit digit pass (each block takes a tile by an atomicAdd on a
counter, reads its keys, publishes its digit counts to a look-back array, looks back over
its predecessors' published counts, reads the pass's bin offsets, and scatters its keys).
What CUB launched, with which grids, tiles and digit bits, is read from its own log
(CUB_DEBUG_LOG: one `Invoking histogram_kernel<<<G, T, ...>>>(), I items per iteration,
...` line per launch), so the model holds for whatever occupancy and tuning the GPU and
CUB version give. With N keys of 4 bytes, R = 2^bit_grain digits, P passes, B_p blocks in
pass p (the CUB source each line follows is cub/agent/agent_radix_sort_histogram.cuh and
agent_radix_sort_onesweep.cuh at CCCL 3.0):

  histogram       loads 4N (LoadTileKeys: guarded, every key once);
                  atomics 4 H: H = sum over blocks and passes of the digits the block
                  counted (AccumulateGlobalHistograms adds only counts > 0); a block
                  takes tiles b, b + G, ... of T x I keys; the last, partial tile also
                  counts its out-of-range slots, which hold the default key 0xffffffff
                  (digit R - 1 in every pass). H is computed from the keys (KEYS.bin);
  exclusive sum   loads 4 R P, stores 4 R P;
  onesweep        loads 4N + 4 R B_p per pass (its keys; d_bins_in, one per digit per
                  block); stores 4N per pass (the keys); volatile stores 8 R B_p per
                  pass (LookbackPartial and LookbackGlobal, one per digit per block);
                  atomics 4 B_p per pass (the tile counter);
                  volatile loads: the look-back's polls (ThreadLoad<LOAD_VOLATILE> of a
                  predecessor's slot until it is published). 0 when B_p = 1 (block 0
                  looks at no predecessor); otherwise at least 4 R (B_p - 1) (every
                  later block reads at least one predecessor's slot per digit) and not
                  predictable: how often a block polls a slot not yet published, and
                  how far back it must look before it finds an inclusive value, depend
                  on when the blocks run.

So exact prediction of the total is infeasible for a multi-block sort, and only there:
the small size (N = 7000: above the single-tile path's 256 x 19 keys, within one onesweep
tile of 384 x 20) runs every pass in one block and its totals are checked exactly, every
load, store and atomic of every kernel. The large size (N = 2^22 + 12345, 548 blocks per
pass) is checked exactly for everything but the look-back polls, which mem_kernel sets
apart by their ordering (the only volatile loads in the module: `ld.volatile.global`,
seen in nvcc 13.0's PTX of it; every other access names no ordering): plain loads,
stores, volatile stores and atomics exactly, per kernel, and the polls against their lower
bound. mem_traffic's totals (loads, stores, atomics) are checked the same way: exact for
the small size, and for the large one stores and atomics exact, loads at least the model
without polls plus the bound. The look-back polls are read off as the difference and
printed. ncu's sector counts would not do as a twin: they count cache sectors, not the
bytes instructions move.

No generic accesses are expected (nvcc names .global for every one of CUB's); generic
bytes are added to global in the totals and shown apart, so a mismatch that equals them
says where it comes from.

    BPF2PTX=gpu-carry/bpf2ptx python3 tests/gpu/cub_sort.py [OUT.md]

needs nvcc (PATH, CUDA_HOME/bin or /usr/local/cuda/bin; its CCCL), the interposer beside
the bpf2ptx binary, and a GPU of compute capability 9.0 or more. Exit 1 when a check
fails; 77 (skipped) without nvcc or CUB's headers.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Table, last_snapshots, skip  # noqa: E402
from trace_torch import instrumented  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BPF2PTX = os.environ.get("BPF2PTX", os.path.join(REPO, "target/release/bpf2ptx"))
SRC = os.path.join(HERE, "trace", "cub_sort.cu")
MEM_TRAFFIC = os.path.join(REPO, "examples/probes/mem_traffic.bpf.o")
MEM_KERNEL = os.path.join(REPO, "examples/probes/mem_kernel.bpf.o")
SIZES = [7000, (1 << 22) + 12345]
# mem_kernel's key fields.
LOAD, STORE, ATOMIC = 0, 1, 2
VOLATILE = 2
GLOBALISH = (0, 1)  # generic, global


def nvcc():
    for c in (shutil.which("nvcc"),
              os.path.join(os.environ.get("CUDA_HOME", ""), "bin", "nvcc"),
              "/usr/local/cuda/bin/nvcc"):
        if c and os.path.exists(c):
            return c
    return None


# ---------------------------------------------------------------- CUB's log

def cub_launches(stdout):
    """CUB_DEBUG_LOG's `Invoking NAME<<<GRID, BLOCK, 0, STREAM>>>(), ...` lines: one dict per
    launch, in order: name, grid, block, items (per thread / iteration), bits
    (bit_grain), bit (current bit)."""
    out = []
    for m in re.finditer(r"^Invoking (\w+)<<<(\d+), (\d+), \d+, -?\d+>>>\(\)(.*)$", stdout,
                         re.M):
        rest = m.group(4)
        num = lambda pat: int(re.search(pat, rest).group(1)) if re.search(pat, rest) else None  # noqa: E731
        out.append({"name": m.group(1), "grid": int(m.group(2)), "block": int(m.group(3)),
                    "items": num(r"(\d+) items per"), "bits": num(r"bit_grain (\d+)"),
                    "bit": num(r"current bit (\d+)")})
    return out


def histogram_atomics(keys, n, grid, tile, passes, bits):
    """H: the atomicAdds of the histogram kernel, from the keys (little-endian u32 bytes):
    per block b (tiles b, b + grid, ...) and pass p, the digits its tiles hold, with the
    default key's digit (all ones) added for a partial tile's empty slots."""
    assert bits == 8, "the byte-slicing below reads 8-bit digits"
    top = (1 << bits) - 1
    h = 0
    for b in range(grid):
        seen = [set() for _ in range(passes)]
        t = b
        while t * tile < n:
            s, e = t * tile, min(n, (t + 1) * tile)
            for p in range(passes):
                seen[p].update(keys[4 * s + p:4 * e:4])
                if e - s < tile:
                    seen[p].add(top)
            t += grid
        h += sum(len(x) for x in seen)
    return h


def model(launches, n, keys):
    """Per kernel kind, {(dir, sem class): bytes} (sem class "plain" or "volatile") and the
    look-back bound; None and why when CUB took a path this model does not describe."""
    kinds = [x["name"] for x in launches]
    if set(kinds) != {"histogram_kernel", "exclusive_sum_kernel", "onesweep_kernel"} or \
            kinds.count("histogram_kernel") != 1 or kinds.count("exclusive_sum_kernel") != 1:
        return None, f"CUB launched {kinds}: not the one-portion onesweep path modelled here"
    hist = next(x for x in launches if x["name"] == "histogram_kernel")
    exs = next(x for x in launches if x["name"] == "exclusive_sum_kernel")
    ones = [x for x in launches if x["name"] == "onesweep_kernel"]
    radix = 1 << exs["bits"]
    passes = exs["grid"]
    if len(ones) != passes:
        return None, f"{len(ones)} onesweep launches for {passes} passes (several portions?)"
    tile = ones[0]["block"] * ones[0]["items"]
    for x in ones:
        if x["grid"] != -(-n // tile):
            return None, f"onesweep grid {x['grid']} is not ceil({n} / {tile})"
    h = histogram_atomics(keys, n, hist["grid"], hist["block"] * hist["items"], passes,
                          hist["bits"])
    blocks = [x["grid"] for x in ones]
    m = {
        "histogram": {(LOAD, "plain"): 4 * n, (ATOMIC, "plain"): 4 * h},
        "exclusive_sum": {(LOAD, "plain"): 4 * radix * passes,
                          (STORE, "plain"): 4 * radix * passes},
        "onesweep": {(LOAD, "plain"): sum(4 * n + 4 * radix * b for b in blocks),
                     (STORE, "plain"): 4 * n * passes,
                     (STORE, "volatile"): sum(8 * radix * b for b in blocks),
                     (ATOMIC, "plain"): 4 * sum(blocks)},
    }
    polls_min = sum(4 * radix * (b - 1) for b in blocks)
    info = {"radix": radix, "passes": passes, "blocks": blocks, "tile": tile, "H": h,
            "hist_grid": hist["grid"], "hist_tile": hist["block"] * hist["items"],
            "polls_min": polls_min, "exact": all(b == 1 for b in blocks)}
    return (m, info), None


def kind(name):
    for k, pat in (("histogram", "RadixSortHistogramKernel"),
                   ("exclusive_sum", "RadixSortExclusiveSumKernel"),
                   ("onesweep", "RadixSortOnesweepKernel")):
        if pat in name:
            return k
    return name


# ---------------------------------------------------------------- the probes' maps

def by_kernel(kmem, names):
    """mem_kernel's kmem_bytes as {kernel kind: {(dir, sem class): bytes}} over global and
    generic addresses, and the generic bytes alone."""
    out, generic = {}, 0
    for key, v in kmem.items():
        k, sem, d, space = key >> 8, key >> 5 & 7, key >> 3 & 3, key & 7
        if space not in GLOBALISH or not v:
            continue
        if space == 0:
            generic += v
        cls = "volatile" if sem == VOLATILE else ("plain" if sem in (0, 1) else f"sem{sem}")
        per = out.setdefault(kind(names.get(k, str(k))), {})
        per[(d, cls)] = per.get((d, cls), 0) + v
    return out, generic


def by_op(traffic):
    """mem_traffic's traffic_bytes as totals over global and generic addresses: loads
    (ld, ldu), stores (st), atomics (atom, red), anything else, and generic alone."""
    t = {"loads": 0, "stores": 0, "atomics": 0, "other": 0, "generic": 0}
    for key, v in traffic.items():
        op, side, space = key >> 4, key >> 3 & 1, key & 7
        if key & 15 == 15 or space not in GLOBALISH or not v:
            continue
        if space == 0:
            t["generic"] += v
        if side == 0 and op in (1, 2):
            t["loads"] += v
        elif side == 0 and op == 3:
            t["stores"] += v
        elif side == 0 and op in (20, 21):
            t["atomics"] += v
        else:
            t["other"] += v
    return t


# ---------------------------------------------------------------- the runs

def main():
    t = Table("cub")
    t.finish_on_sigterm()
    tool = nvcc()
    if not tool:
        skip("nvcc not found (PATH, CUDA_HOME/bin, /usr/local/cuda/bin)")
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "cub_sort")
        b = subprocess.run([tool, "-O2", "-gencode", "arch=compute_90,code=compute_90", SRC,
                            "-o", exe], capture_output=True, text=True)
        print(b.stderr[-3000:], file=sys.stderr)
        missing = re.search(r"^.*cub/\S+\.cuh.*(?:No such file|cannot open).*$", b.stderr, re.M)
        if b.returncode != 0 and missing:
            skip(f"CUB's headers are not with this nvcc ({tool}): {missing.group(0).strip()}")
        t.check("build", "nvcc -gencode arch=compute_90,code=compute_90", b.returncode, 0)
        if b.returncode != 0:
            t.finish()
        # Kernel indices (mem_kernel's ctx->kernel) to names: inject on the CPU.
        sites = os.path.join(tmp, "sites.json")
        r = subprocess.run([BPF2PTX, "inject", MEM_KERNEL, "--into", exe, "-o",
                            os.path.join(tmp, "probed.ptx"), "--sites", sites],
                           capture_output=True, text=True)
        names = {}
        if r.returncode == 0:
            names = {s["kernel_index"]: s["kernel"] for s in json.load(open(sites))}
        else:
            print(r.stderr, file=sys.stderr)
        kinds = {kind(v) for v in names.values()}
        t.check("build", "kernels with memory sites (bpf2ptx inject, CPU) include CUB's three",
                {"histogram", "exclusive_sum", "onesweep"} <= kinds, True)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        for n in SIZES:
            case = f"N={n}"
            plain_out, keys_file = os.path.join(tmp, f"plain-{n}.bin"), os.path.join(tmp, "keys.bin")
            plain = subprocess.run([exe, str(n), plain_out, keys_file], capture_output=True,
                                   text=True)
            print(plain.stdout[-2000:], plain.stderr[-2000:], sep="\n", file=sys.stderr)
            t.check(case, "untraced: exit code, agrees with std::sort",
                    (plain.returncode, "agrees 1" in plain.stdout), (0, True))
            launches = cub_launches(plain.stdout)
            keys = open(keys_file, "rb").read() if os.path.exists(keys_file) else b""
            got_model, why = model(launches, n, keys)
            t.check(case, "CUB's path (its log): histogram, exclusive sum, onesweep per pass",
                    why or "onesweep", "onesweep")
            if got_model:
                print(f"  {case}: {got_model[1]}", file=sys.stderr)
            for probe in (MEM_TRAFFIC, MEM_KERNEL):
                tag = os.path.basename(probe).split(".")[0]
                out = os.path.join(tmp, f"{tag}-{n}.bin")
                snaps = os.path.join(tmp, f"{tag}-{n}.jsonl")
                tr = subprocess.run([BPF2PTX, "trace", "--format", "json", "--interval", "10s",
                                     "-o", snaps, probe, "--", exe, str(n), out],
                                    capture_output=True, text=True, env=env)
                print(tr.stderr[-3000:], file=sys.stderr)
                same = (os.path.exists(out) and os.path.exists(plain_out)
                        and open(out, "rb").read() == open(plain_out, "rb").read())
                t.check(case, f"{tag}: exit code, sorted keys equal the untraced run's",
                        (tr.returncode, same), (0, True))
                t.check(case, f"{tag}: CUB made the same launches as untraced",
                        cub_launches(tr.stdout), launches)
                probed = {kind(k) for k in instrumented(tr.stderr)}
                t.check(case, f"{tag}: kernels instrumented (stderr) include CUB's three",
                        {"histogram", "exclusive_sum", "onesweep"} <= probed, True)
                lines = []
                if os.path.exists(snaps):
                    lines = [json.loads(x) for x in open(snaps) if x.lstrip().startswith("{")]
                procs = last_snapshots(lines)
                snap = next(iter(procs.values()), {"maps": {}, "failures": []})
                t.check(case, f"{tag}: one process, no map failures",
                        (len(procs), snap["failures"]), (1, []))
                # The model of this run: from its own log (the same launches as untraced,
                # checked above, unless instrumenting changed an occupancy CUB asked for).
                mine, _ = model(cub_launches(tr.stdout), n, keys)
                if not mine:
                    continue
                want, info = mine
                maps = snap["maps"]
                traffic = maps.get("traffic_bytes", {}) if probe == MEM_TRAFFIC else None
                kmem = maps.get("kmem_bytes", {}) if probe == MEM_KERNEL else None
                for r in byte_rows(case, want, info, traffic, kmem, names):
                    t.check(*r)
                polls = look_back(maps, names, want)
                if polls is not None and not info["exact"]:
                    print(f"  {case}: {tag}: look-back polls {polls} bytes (at least "
                          f"{info['polls_min']}: {polls / max(info['polls_min'], 1):.2f}x)",
                          file=sys.stderr)
    t.finish()


def look_back(maps, names, want):
    """The look-back polls a run's maps show (model loads subtracted), or None."""
    if "kmem_bytes" in maps:
        return by_kernel(maps["kmem_bytes"], names)[0].get("onesweep", {}).get((LOAD, "volatile"), 0)
    if "traffic_bytes" in maps:
        return by_op(maps["traffic_bytes"])["loads"] - sum(
            v for per in want.values() for (d, _), v in per.items() if d == LOAD)
    return None


def byte_rows(case, want, info, traffic, kmem, names):
    """The byte checks, as rows (case, what, got, want): mem_traffic's totals (`traffic`:
    traffic_bytes as {key: value}) and mem_kernel's per-kernel bytes (`kmem`: kmem_bytes;
    `names`: kernel index -> name) against the model `want` (model()). Either map may be
    None (its run did not happen)."""
    rows = []
    total = lambda d: sum(v for per in want.values() for (dd, _), v in per.items() if dd == d)  # noqa: E731
    if traffic is not None:
        got = by_op(traffic)
        note = f" (generic {got['generic']})" if got["generic"] else ""
        rows.append((case, f"mem_traffic: global stores, atomics, other{note}",
                     (got["stores"], got["atomics"], got["other"]),
                     (total(STORE), total(ATOMIC), 0)))
        if info["exact"]:
            rows.append((case, "mem_traffic: global loads (one block per pass: no look-back)",
                         got["loads"], total(LOAD)))
        else:
            polls = got["loads"] - total(LOAD)
            rows.append((case, f"mem_traffic: global loads - model = look-back polls ({polls} "
                         f"bytes) >= 4 R (B - 1) per pass ({info['polls_min']})",
                         polls >= info["polls_min"], True))
    if kmem is not None:
        got, generic = by_kernel(kmem, names)
        note = f" (generic {generic})" if generic else ""
        for k in ("histogram", "exclusive_sum", "onesweep"):
            g = dict(got.get(k, {}))
            polls = g.pop((LOAD, "volatile"), 0)
            rows.append((case, f"mem_kernel: {k}: bytes by direction and ordering{note}",
                         sorted(g.items()), sorted(want[k].items())))
            if k != "onesweep":
                continue
            if info["exact"]:
                rows.append((case, "mem_kernel: onesweep: look-back polls (one block per pass)",
                             polls, 0))
            else:
                rows.append((case, f"mem_kernel: onesweep: look-back polls ({polls} bytes) >= "
                             f"4 R (B - 1) per pass ({info['polls_min']})",
                             polls >= info["polls_min"], True))
        others = sorted(k for k in got if k not in ("histogram", "exclusive_sum", "onesweep"))
        rows.append((case, "mem_kernel: no other kernel moved global bytes", others, []))
    return rows


if __name__ == "__main__":
    main()
