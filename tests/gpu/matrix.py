#!/usr/bin/env python3
"""GPU test matrix of the device runtime: every map kind x placement and every helper.

Run from the repository root on the GPU machine:

    BPF2PTX=./target/release/bpf2ptx python3 tests/gpu/matrix.py [OUT.md]

Each case runs `bpf2ptx run PROBE --maps` on a launch, then compares the maps it prints
with a CPU model of that launch (the expectations below); the probes are
tests/corpus/src/rt_maps, rt_helpers, rt_rings and ring_live. Prints one table row per
check and exits 1 if any check fails. The table goes to OUT.md too when given.
"""
import json
import os
import subprocess
import sys

from checks import Table, val
import time

B = os.environ.get("BPF2PTX", "./target/release/bpf2ptx")
OBJ = "tests/corpus/obj/"
T = Table()
check = T.check



def run(obj, grid, block, *extra):
    cmd = [B, "run", OBJ + obj, "--target", "sm_90", "--grid", str(grid), "--block",
           str(block), "--maps", *extra]
    t = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        print("FAIL", " ".join(cmd), out.returncode, out.stderr[-3000:], flush=True)
        sys.exit(1)
    head, _, rest = out.stdout.partition("\n")
    printk = []
    while rest.startswith("printk: "):
        line, _, rest = rest.partition("\n")
        printk.append(line[len("printk: "):])
    maps = {m["name"]: m for m in json.loads(rest)}
    print(f"# {' '.join(cmd[1:])}\n#   {head}  ({time.time() - t:.1f} s)", flush=True)
    # With BPF2PTX_DRAIN_STATS=1 in the environment, `run` says what the live drainer did.
    for line in out.stderr.splitlines():
        if line.startswith("drain: "):
            print(f"#   {line}", flush=True)
    return head, printk, maps




def array(m):
    """Per key, the value; per-SM maps (per-CPU arrays) print every SM's copy: their sum."""
    return [sum(val(v["value"]) for v in e["values"]) if "values" in e else val(e["value"])
            for e in m["entries"]]


def records(m):
    if "records" in m:
        return [bytes(int(x, 16) for x in r) for r in m["records"]]
    return [bytes.fromhex(r) for r in m.get("records_hex", [])]


def ring_check(case, m, events, tag, fails):
    recs = records(m)
    gs = [int.from_bytes(r[:8], "little") for r in recs]
    tags_ok = all(int.from_bytes(r[8:16], "little") == tag and len(r) == 16 for r in recs)
    check(case, f"{m['name']}: records + drops = events", len(recs) + m["drops"], events)
    check(case, f"{m['name']}: records intact, no thread twice", tags_ok and len(set(gs)) == len(gs), True)
    check(case, f"{m['name']}: outputs that failed = drops", fails, m["drops"])
    return len(recs), m["drops"]


def rt_maps(case, grid, block, *extra):
    n = grid * block
    _, _, m = run("rt_maps.v3.o", grid, block, *extra)
    check(case, "array (2) arr[64]: every slot", set(array(m["arr"])), {n // 64})
    check(case, f"percpu array (6) pcpu[32]{' sharded' if 'sharded' in m['pcpu'] else ''}: every slot",
          set(array(m["pcpu"])), {n // 32})
    check(case, "GPU array (1503) garr[16]: every slot", set(array(m["garr"])), {n // 16})
    h = m["hash"]
    keys = sorted(val(e["key"]) for e in h["entries"])
    check(case, "hash (1): keys, every count, counted full/busy, key count",
          (keys == list(range(4096)), {val(e["value"]) for e in h["entries"]}, h["counts"], h["keys"]),
          (True, {n // 4096}, {"full": 0, "busy": 0}, 4096))
    mine = m["mine"]["entries"][0]
    check(case, "per-thread (1502): sum of thread ids", (mine["threads"], mine["sum_u64"]),
          (n, n * (n - 1) // 2))
    res = array(m["res"])
    ops = array(m["churn_ops"])
    present = {}
    for e in m["churn"]["entries"]:
        k = val(e["key"])
        present[k] = present.get(k, 0) + 1
    per_key = all(ops[2 * k] - ops[2 * k + 1] == present.get(k, 0) and present.get(k, 0) <= 1
                  for k in range(1024))
    check(case, "GPU hash (1501) insert/delete race: per key inserts - deletes = copies left (<= 1)",
          per_key, True)
    check(case, "GPU hash: insert results (ok+EEXIST+E2BIG+EBUSY), other errors",
          (res[0] + res[1] + res[2] + res[3], res[4]), (n, 0))
    check(case, "GPU hash: delete results (ok+ENOENT), other errors", (res[5] + res[6], res[7]), (n, 0))
    c = m["churn"]["counts"]
    check(case, "GPU hash: inserts ok = sum of per-key inserts; E2BIG, EBUSY = counted full, busy",
          (res[0], res[2], res[3]), (sum(ops[0::2]), c["full"], c["busy"]))
    check(case, "GPU hash: key count = keys left", m["churn"]["keys"], len(present))
    print(f"#   churn: inserts ok {res[0]}, EEXIST {res[1]}, E2BIG {res[2]}, EBUSY {res[3]}, "
          f"deletes ok {res[5]}, ENOENT {res[6]}, keys left {len(present)}", flush=True)
    check(case, "hash lookups after insert failed", res[8], 0)


def rt_helpers(case, grid, block, *extra):
    n = grid * block
    _, printk, m = run("rt_helpers.v3.o", grid, block, *extra)
    bad = array(m["bad"])
    check(case, "helpers 14, 503-505, 508-511, 8, 600-602, 5, 502, 506: failed checks", bad[:11], [0] * 11)
    check(case, "launch shape seen (508 grid.x, 504 block.x, y*z)", array(m["shape"]), [grid, block, 1])
    sm = array(m["per_sm"])
    check(case, "per SM (509): sum, SMs used <= 132", (sum(sm), sum(1 for c in sm if c) <= 132), (n, True))
    check(case, "507 gpu_exit: threads ran, ran past exit", array(m["after_exit"]), [n, 0])
    want = sorted([f"rt_helpers thread {g} block {g // block} lane {g % block % 32}"
                   for g in range(0, n, 65536)] + ["rt_helpers puts"])
    check(case, "trace_printk (6) + puts (501) lines", sorted(printk) == want, True)


def rt_rings(case, grid, block, *extra):
    n = grid * block
    head, _, m = run("rt_rings.v3.o", grid, block, *extra)
    fails = array(m["fails"])
    for r in ("rb", "grb", "perf"):
        check(case, f"{r}: decoded without error", m[r].get("error"), None)
    ring_check(case, m["rb"], n, 27, fails[0])
    ring_check(case, m["grb"], n, 1527, fails[1])
    ring_check(case, m["perf"], (n + 31) // 32, 4, fails[2])


def ring_live(case, grid, block, *extra):
    n = grid * block
    head, _, m = run("ring_live.v3.o", grid, block, *extra)
    rs = records(m["events"])
    recs, drops = len(rs), m["events"]["drops"]
    gs = {int.from_bytes(r[:8], "little") for r in rs}
    check(case, "ringbuf 64 KiB: records + drops = events", recs + drops, n)
    check(case, "records intact, no thread twice", len(gs), recs)
    seen = array(m["seen"])
    check(case, "outputs that failed = drops", seen[1], drops)
    check(case, "decoded without error", m["events"].get("error"), None)
    # How long the recorded threads waited before their output (ns, the record's 2nd word).
    waits = sorted(int.from_bytes(r[8:16], "little") for r in rs if len(r) == 16)
    q = (lambda f: waits[min(len(waits) - 1, int(f * len(waits)))]) if waits else (lambda f: 0)
    print(f"#   {case}: {recs} records, {drops} drops, {seen[0]} threads saw consumer > 0, "
          f"waits of recorded threads (us) min {q(0) / 1e3:.1f} median {q(0.5) / 1e3:.1f} "
          f"max {q(1) / 1e3:.1f}; {head}", flush=True)
    return recs, drops


def reserve_discard(case, grid, block, *extra):
    """ringbuf.v2 `trace_exit`: every thread reserves a 40-byte event (48 bytes in the
    ring); thread (0,0,0) of each block fills and submits it, the others discard it. With
    nothing consumed during the launch (device placement, or host without draining) the
    ring holds what fit: every reserved record is committed or discarded, so producer / 48
    reservations + drops = threads, and the committed ones are one per block at most."""
    n = grid * block
    _, _, m = run("ringbuf.v2.o", grid, block, "--program", "trace_exit", *extra)
    ev = m["events"]
    recs = records(ev)
    blocks = [tuple(int.from_bytes(r[8 * k:8 * k + 8], "little") for k in (1, 2, 3))
              for r in recs]
    check(case, "reserve/discard: decoded without error", ev.get("error"), None)
    check(case, "reserved records + drops = events", ev["producer"] // 48 + ev["drops"], n)
    check(case, "submitted: kind 1, one per block at most, blocks in the grid",
          all(int.from_bytes(r[36:40], "little") == 1 for r in recs)
          and len(set(blocks)) == len(blocks) and all(b[0] < grid for b in blocks), True)
    print(f"#   {case}: {len(recs)} submitted, {ev['producer'] // 48 - len(recs)} discarded, "
          f"{ev['drops']} drops", flush=True)


G, BL = 4096, 256  # 1,048,576 threads
MAPS = ["arr", "pcpu", "garr", "hash", "mine", "churn", "churn_ops", "res"]
host = lambda names: [a for x in names for a in ("--map", f"{x}=host")]
on_device = lambda names: [a for x in names for a in ("--map", f"{x}=device")]  # rings default to host

ONLY = os.environ.get("ONLY", "")  # ONLY=ring_live: just the live-drain cases
# BPF2PTX_DRAIN_STATS=1: each drained run also prints the drainer's passes and publishes.
if not ONLY:
    rt_maps("rt_maps, device", G, BL)
    if not os.environ.get("SKIP_HOST_MAPS"):  # about 3 minutes: hash probes over PCIe
        rt_maps("rt_maps, host", G, BL, *host(MAPS))
    rt_maps("rt_maps, sharded (forced)", G, BL, "--map", "arr=sharded", "--map", "garr=sharded")
    rt_helpers("rt_helpers 4096x256, device", G, BL)
    rt_helpers("rt_helpers 1000x100, host", 1000, 100, *host(["bad", "shape", "per_sm", "after_exit"]))
    rt_rings("rt_rings, device", G, BL, *on_device(["rb", "grb", "perf"]))
    rt_rings("rt_rings, host (drained live)", G, BL, *host(["rb", "grb", "perf", "fails"]))
    reserve_discard("ringbuf reserve/submit/discard, device", G, BL, *on_device(["events"]))
    reserve_discard("ringbuf reserve/submit/discard, host", G, BL, *host(["events"]),
                    "--no-drain")
live = ring_live("ring_live, host, drained live", G, BL, *host(["events"]))
dead = ring_live("ring_live, host, --no-drain", G, BL, *host(["events"]), "--no-drain")
dev = ring_live("ring_live, device", G, BL, *on_device(["events"]))
check("ring_live", "drained live keeps at least 3x the records of --no-drain", live[0] >= 3 * dead[0], True)

T.finish()
