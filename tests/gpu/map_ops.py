#!/usr/bin/env python3
"""GPU check: map_update_elem flags, map_delete_elem and their errors on every array
kind (2, 1503, 6 per SM, 1502 per thread, 1600 per warp) and a hash map, from 1,048,576
threads, in device memory and with every map in host memory.

Run from the repository root on the GPU machine:

    BPF2PTX=./target/release/bpf2ptx python3 tests/gpu/map_ops.py [OUT.md]

The probe (tests/gpu/probes/map_ops.bpf.c) counts in `ok[i]` the threads whose
operation i returned what Linux returns; the CPU model says every count is the number of
threads, and what the maps hold afterwards (below).
"""
import json
import os
import subprocess
import sys

from checks import Table, val

B = os.environ.get("BPF2PTX", "./target/release/bpf2ptx")
OBJ = "tests/gpu/probes/map_ops.o"
OPS = ["BPF_ANY -> 0", "BPF_NOEXIST -> -EEXIST", "BPF_EXIST -> 0", "key out of range -> -E2BIG",
       "delete -> -EINVAL", "flags 3 -> -EINVAL"]
NAMES = [f"{m}: {op}" for m in ("array (2)", "GPU array (1503)", "per-SM array (6)",
                                "per-thread array (1502)", "per-warp array (1600)")
         for op in OPS]
NAMES += ["hash: BPF_EXIST on an absent key -> -ENOENT", "hash: delete an absent key -> -ENOENT",
          "hash: BPF_ANY -> 0", "hash: then BPF_EXIST -> 0", "hash: then BPF_NOEXIST -> -EEXIST",
          "hash: lookup finds the value"]
T = Table("placement")
check = T.check





MAPS = ["arr", "garr", "pcpu", "pt", "pw", "ok", "hash"]
G, BL = 4096, 256
for case, extra in [("device", []), ("host", [a for m in MAPS for a in ("--map", f"{m}=host")])]:
    n = G * BL
    out = subprocess.run([B, "run", OBJ, "--target", "sm_90", "--grid", str(G), "--block",
                          str(BL), "--maps", *extra], capture_output=True, text=True)
    if out.returncode != 0:
        print("FAIL", case, out.stderr[-2000:])
        sys.exit(1)
    print(f"# {case}: {out.stdout.partition(chr(10))[0]}", flush=True)
    m = {x["name"]: x for x in json.loads(out.stdout.partition("\n")[2])}
    ok = [val(e["value"]) for e in m["ok"]["entries"]]
    for i, name in enumerate(NAMES):
        check(case, f"threads that got it: {name}", ok[i], n)
    for a in ("arr", "garr"):
        vals = [val(e["value"]) for e in m[a]["entries"]]
        check(case, f"{a}: slot k holds a thread id = k mod 64",
              all(v % 64 == k and v < n for k, v in enumerate(vals)), True)
    per_sm = [[val(v["value"]) for v in e["values"]] for e in m["pcpu"]["entries"]]
    check(case, "pcpu: every SM copy of slot k is 0 or a thread id = k mod 64, some not 0",
          all(any(vs) and all(v == 0 or (v % 64 == k and v < n) for v in vs)
              for k, vs in enumerate(per_sm)), True)
    pt = m["pt"]["entries"]
    check(case, "pt: each thread's slot 0 holds its id (sum), slot 1 untouched",
          (pt[0]["sum_u64"], pt[1]["sum_u64"], pt[0]["threads"]), (n * (n - 1) // 2, 0, n))
    pw = m["pw"]["entries"]
    check(case, "pw: warps, slot 1 untouched", (pw[0]["warps"], pw[1]["sum_u64"]), (n // 32, 0))
    h = {val(e["key"]): val(e["value"]) for e in m["hash"]["entries"]}
    check(case, "hash: keys 0..63, each key * 5, nothing counted full or busy",
          (h == {k: k * 5 for k in range(64)}, m["hash"]["counts"]), (True, {"full": 0, "busy": 0}))

T.finish()
