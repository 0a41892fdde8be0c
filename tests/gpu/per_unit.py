#!/usr/bin/env python3
"""GPU check: per-warp arrays (1600) and per-SM arrays (per-CPU arrays, 6).

Run from the repository root on the GPU machine:

    BPF2PTX=./target/release/bpf2ptx python3 tests/gpu/per_unit.py [OUT.md]

The probe tests/gpu/probes/per_unit.o adds, for every thread, 1 and the global thread id
to its warp's slots 0 and 1 of `pw` (per-warp), 1 to its SM's slot 0 of `psm` (per-SM),
and stores its SM id + 1 in its SM's slot 1. The CPU model: warp w of a block of T
threads holds the block's linear threads 32w .. min(32w + 32, T) - 1, so its slot 0 is
their count and slot 1 the sum of their global ids; the per-SM slot 0 sums to the
threads, and every SM copy that counted threads holds its own id + 1 in slot 1.

Part 1 goes through the loader (`bpf2ptx run --maps`, 1-D launches, the JSON dump);
part 2 loads the PTX with CuPy and binds the per-warp storage itself, as a host written
from specs/abi.md would, for 3-D launches (block shapes whose thread count is not a
multiple of 32 included).

Part 3 checks execution granularity through the loader with tests/gpu/probes/granularity.o:
a program whose section names none runs per thread, per warp or per block as
`--granularity` says; `gpu/entry.warp/K` runs once per warp on its lowest active lane
(lane 0 here: every lane is active at entry), `gpu/entry.block/K` once per block on
thread (0,0,0), whatever `--granularity` says. `get_active_mask` returns, per thread, its
warp's active lanes; in a per-warp program, the lanes its leader stands for (also inside a
subprogram); in a per-block program, the block's thread alone (specs/abi.md).
"""
import json
import os
import subprocess
import sys

from checks import Table, val
import tempfile

import cupy as cp
import numpy as np

B = os.environ.get("BPF2PTX", "./target/release/bpf2ptx")
OBJ = "tests/gpu/probes/per_unit.o"
T = Table(width=60)
check = T.check


def model(blocks, threads):
    """Per global warp: (threads in it, sum of their global ids)."""
    counts, sums = [], []
    for b in range(blocks):
        for w in range((threads + 31) // 32):
            ts = range(32 * w, min(32 * w + 32, threads))
            counts.append(len(ts))
            sums.append(sum(b * threads + t for t in ts))
    return counts, sums


def sm_check(case, slot0, slot1, threads):
    used = [r for r in range(len(slot0)) if slot0[r]]
    check(case, "per-SM slot 0: sum = threads", sum(slot0), threads)
    check(case, "per-SM slot 1: each SM's copy holds its own id + 1 (and only those)",
          all(slot1[r] == (r + 1 if slot0[r] else 0) for r in range(len(slot0))), True)
    check(case, "per-SM copies used <= SMs of the GPU", 0 < len(used) <= SMS, True)


SMS = cp.cuda.Device().attributes["MultiProcessorCount"]

# Part 1: the loader, 1-D.
HOST = ["--map", "pw=host", "--map", "psm=host"]
for grid, block, extra in [(250, 100, []), (30, 33, []), (4096, 256, []), (250, 100, HOST),
                           (4096, 256, HOST)]:
    case = f"loader {grid}x{block}{', host' if extra else ''}"
    out = subprocess.run([B, "run", OBJ, "--target", "sm_90", "--grid", str(grid), "--block",
                          str(block), "--maps", *extra], capture_output=True, text=True)
    if out.returncode != 0:
        print("FAIL", case, out.stderr[-2000:])
        sys.exit(1)
    maps = {m["name"]: m for m in json.loads(out.stdout.partition("\n")[2])}
    counts, sums = model(grid, block)
    pw, psm = maps["pw"], maps["psm"]
    if len(counts) <= 1024:
        got = [[val(v["value"]) for v in e["values"]] for e in pw["entries"]]
        check(case, "per-warp slot 0: threads of each warp", got[0], counts)
        check(case, "per-warp slot 1: sum of each warp's global thread ids", got[1], sums)
    else:
        check(case, "per-warp slot 0 (sum over warps), warps",
              (pw["entries"][0]["sum_u64"], pw["entries"][0]["warps"]),
              (sum(counts), len(counts)))
        check(case, "per-warp slot 1 (sum over warps)", pw["entries"][1]["sum_u64"],
              sum(sums) % 2**64)
    slot0 = [val(v["value"]) for v in psm["entries"][0]["values"]]
    slot1 = [val(v["value"]) for v in psm["entries"][1]["values"]]
    sm_check(case, slot0, slot1, grid * block)

# Part 2: CuPy, 3-D launches, storage bound by hand (specs/abi.md).
ptx = os.path.join(tempfile.mkdtemp(), "per_unit.ptx")
subprocess.run([B, OBJ, "--entry", "--target", "sm_90", "-o", ptx], check=True)
mod = cp.RawModule(path=ptx)
fn = mod.get_function("bpf2ptx_entry_per_unit")
desc_pw = cp.ndarray((8,), cp.uint64, mod.get_global("bpf2ptx_map_pw"))
desc_psm = cp.ndarray((8,), cp.uint64, mod.get_global("bpf2ptx_map_psm"))
replicas, replica_bytes = (int(x) for x in desc_psm[4:6].get())
psm = cp.ndarray((replicas * replica_bytes // 8,), cp.uint64,
                 mod.get_global("bpf2ptx_mapdata_psm"))
res = cp.zeros(1, cp.uint64)
for grid, block in [((3, 2, 2), (8, 4, 3)), ((2, 3, 1), (7, 5, 3)), ((64, 2, 1), (33, 1, 1)),
                    ((5, 1, 3), (1, 1, 40)), ((1024, 1, 1), (256, 1, 1))]:
    case = f"CuPy grid {grid} block {block}"
    blocks, threads = int(np.prod(grid)), int(np.prod(block))
    counts, sums = model(blocks, threads)
    warps = len(counts)
    storage = cp.zeros(2 * warps, cp.uint64)  # key k of warp w at k * warps + w
    desc_pw[3] = storage.data.ptr
    desc_pw[4] = warps
    psm.fill(0)
    fn(grid, block, (cp.uint64(0), cp.uint64(0), res))
    cp.cuda.runtime.deviceSynchronize()
    got = storage.get()
    check(case, "per-warp slot 0: threads of each warp", got[:warps].tolist() == counts, True)
    check(case, "per-warp slot 1: sum of each warp's global thread ids",
          got[warps:].tolist() == sums, True)
    rep = psm.get().reshape(replicas, replica_bytes // 8)
    sm_check(case, rep[:, 0].tolist(), rep[:, 1].tolist(), blocks * threads)

# Part 3: execution granularity (the loader, 1-D launches).
GRAN = "tests/gpu/probes/granularity.o"


def runs(program, grid, block, *extra):
    out = subprocess.run([B, "run", GRAN, "--program", program, "--target", "sm_90", "--grid",
                          str(grid), "--block", str(block), "--maps", *extra],
                         capture_output=True, text=True)
    if out.returncode != 0:
        print("FAIL", program, grid, block, extra, out.stderr[-2000:])
        sys.exit(1)
    maps = {m["name"]: m for m in json.loads(out.stdout.partition("\n")[2])}
    return [val(e["value"]) for e in maps["runs"]["entries"]]  # sharded: summed by the loader


for grid, block in [(250, 100), (30, 33), (4096, 256), (7, 1)]:
    threads, warps, blocks = grid * block, grid * ((block + 31) // 32), grid
    lanes = [min(32, block - 32 * w) for w in range((block + 31) // 32)]  # per warp of a block
    case = f"granularity {grid}x{block}"
    for gran, want, bits in (("thread", threads, grid * sum(n * n for n in lanes)),
                             ("warp", warps, threads), ("block", blocks, blocks)):
        got = runs("g_opt", grid, block, "--granularity", gran)
        check(case, f"kprobe/g_opt --granularity {gran}: runs, active-mask bits",
              (got[0], got[8]), (want, bits))
    for gran in ("thread", "block"):
        got = runs("g_warp", grid, block, "--granularity", gran)
        check(case, f"gpu/entry.warp (--granularity {gran}): runs, active-mask bits, lane ids",
              (got[1], got[3], got[4]), (warps, threads, 0))
        got = runs("g_warp_sub", grid, block, "--granularity", gran)
        check(case, f"gpu/entry.warp (--granularity {gran}): active-mask bits in a subprogram",
              got[6], threads)
    for gran in ("thread", "warp"):
        got = runs("g_block", grid, block, "--granularity", gran)
        check(case, f"gpu/entry.block (--granularity {gran}): runs, sum of tids, mask bits",
              (got[2], got[5], got[7]), (blocks, 0, blocks))

T.finish()
