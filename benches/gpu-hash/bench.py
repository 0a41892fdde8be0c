#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Hash maps on the GPU (issue 12, "Must hold"): bpf2ptx-injected hash-map probes against
native vecadd and hand-written CUDA C++ twins of the same protocol (twin.cu), on one GPU.

Cases (vecadd, threads = elements, 256 threads per block):
  churn_warp    2^20 threads; per warp: update(start, warp id, now) at entry, lookup +
                histogram + delete at exit; 65536 entries; 100 launches, map never cleared
  churn_thread  the same per thread, 2^21 entries
  overfull      2^20 distinct keys into 4096 entries, vs the same into 2^20 entries
  overfull_lru  the same with an LRU hash (9)
  published     2^24 threads, lookup / add / insert NOEXIST into 1024 entries (cuda-counter)
  insert        2^22 distinct keys into 2^22 entries (load 1/2), then BPF_EXIST updates

Each case runs in a process of its own (`--child CASE`), which loads native vecadd, the
injected modules and the twins together, checks exact results, times with CUDA events
and writes its part as JSON; a case that faults or hangs costs only itself. This process
collects the parts and writes the markdown report after each case.

    python3 benches/gpu-hash/bench.py --build B --out benches/results/hash-maps.md

(benches/gpu-hash/run.sh builds B: twin.cubin and vecadd.<probe>.ptx for every probe.)
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples", "lib"))
import hashhost  # noqa: E402

try:
    import cupy
except ImportError:  # the parent process does not need it
    cupy = None

CASES = ["churn_warp", "warp_split", "churn_thread", "overfull", "overfull_lru", "published", "insert"]
# seconds a case may take (the parent also keeps to --budget in all)
CASE_TIMEOUT = {"churn_warp": 80, "warp_split": 40, "churn_thread": 110, "overfull": 60, "overfull_lru": 60,
                "published": 60, "insert": 150}
BLOCK = 256
SHARDS = 256          # bpf2ptx's sharded arrays: 256 replicas (hist, missed)


def value_of(k):
    """probes/common.h VALUE_OF: k * 0x9E3779B97F4A7C15 + 1 (mod 2^64)."""
    with np.errstate(over="ignore"):
        return np.asarray(k, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1)


def not_value_of(k):
    return ~value_of(k)


def fmt_ms(x):
    return "-" if x is None else f"{x:.4f}"


def fmt_x(x):
    return "-" if x is None else f"{x:.3f}x"


def ratio(a, b):
    return a / b if a is not None and b else None


# =========================================================================== child side

class Part:
    """What one case reports: tables (already formatted), checks, targets, notes; saved
    as JSON after every step, so a case killed halfway still reports what it did."""

    def __init__(self, case, path):
        self.path = path
        self.d = {"case": case, "title": "", "intro": [], "tables": [], "checks": [], "targets": [],
                  "notes": [], "raw": {}, "device": {}, "done": False}

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.d, f, indent=1)
        os.replace(tmp, self.path)

    def check(self, what, ok, detail=""):
        ok = bool(ok)
        self.d["checks"].append({"what": what, "ok": ok, "detail": detail})
        print(f"[check] {'ok  ' if ok else 'FAIL'} {what}: {detail}", flush=True)
        self.save()
        return ok

    def target(self, what, value, limit, against, valid=True):
        """valid: the variants measured passed their checks (else the ratio means little)."""
        met = value is not None and value <= limit
        self.d["targets"].append({"what": what, "value": value, "limit": limit, "against": against,
                                  "met": bool(met) if value is not None else None, "valid": bool(valid)})
        print(f"[target] {what}: {fmt_x(value)} (<= {limit}x {against}) "
              f"{'met' if met else 'MISSED' if value is not None else 'not measured'}"
              f"{'' if valid else ' (checks failed)'}", flush=True)
        self.save()

    def table(self, title, header, rows):
        self.d["tables"].append({"title": title, "header": header, "rows": rows})
        self.save()

    def note(self, text):
        self.d["notes"].append(text)
        print(f"[note] {text}", flush=True)
        self.save()


class Vec:
    """vecadd's buffers for n elements; ref = native output (set by the first check)."""

    def __init__(self, n):
        rs = cupy.random.RandomState(1234)
        self.n = n
        self.a = rs.random_sample(n, dtype=cupy.float32)
        self.b = rs.random_sample(n, dtype=cupy.float32)
        self.c = cupy.zeros(n, dtype=cupy.float32)
        self.ref = None
        self.grid, self.block = (n // BLOCK,), (BLOCK,)

    def args(self):
        return (self.a, self.b, self.c, np.int32(self.n))


class Variant:
    def __init__(self, label, kind, launch=None, table=None, zero=None, error=None, **extra):
        self.label, self.kind, self.launch, self.table = label, kind, launch, table
        self.zero_fn, self.error, self.extra = zero, error, extra
        self.times = []
        self.ok = error is None

    def zero(self):
        if self.zero_fn is not None:
            self.zero_fn()


class Ctx:
    def __init__(self, a, part):
        self.a, self.part = a, part
        from bpf2ptx_host import entry_names
        self.kname = entry_names(a.app)[0]
        self.native_fn = cupy.RawModule(path=a.app).get_function(self.kname)
        tpath = os.path.join(a.build, "twin.cubin")
        self.twin_mod = cupy.RawModule(path=tpath) if os.path.exists(tpath) else None
        self.ev0, self.ev1 = cupy.cuda.Event(), cupy.cuda.Event()
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        part.d["device"] = {"name": name, "sms": int(props["multiProcessorCount"]),
                            "cc": f"{props['major']}.{props['minor']}", "cupy": cupy.__version__,
                            "l2_mib": int(props.get("l2CacheSize", 0)) >> 20}

    def timed(self, launch):
        self.ev0.record()
        launch()
        self.ev1.record()
        self.ev1.synchronize()
        return cupy.cuda.get_elapsed_time(self.ev0, self.ev1)

    def native(self, vec, label="native (nvcc PTX)"):
        fn = self.native_fn
        return Variant(label, "native", launch=lambda: fn(vec.grid, vec.block, vec.args()))

    def injected(self, probe):
        """(module, kernel) of build/vecadd.<probe>.ptx; raises with the inject error."""
        p = os.path.join(self.a.build, f"vecadd.{probe}.ptx")
        if not os.path.exists(p):
            err = os.path.join(self.a.build, f"vecadd.{probe}.err")
            why = open(err).read().strip() if os.path.exists(err) else "no such file"
            raise RuntimeError(f"bpf2ptx inject failed: {why[:400]}")
        mod = cupy.RawModule(path=p)
        return mod, mod.get_function(self.kname)

    def twin(self, name):
        if self.twin_mod is None:
            raise RuntimeError("twin.cubin missing (nvcc failed?)")
        return self.twin_mod.get_function(name)

    def check_output(self, v, vec):
        """Launch v once with a cleared output; compare with native's output."""
        vec.c.fill(0)
        v.launch()
        cupy.cuda.Device().synchronize()
        if vec.ref is None:
            vec.ref = vec.c.copy()
            return True
        return bool(cupy.array_equal(vec.c, vec.ref))


def hash_variant(ctx, label, probe, mapname, vec, extra_maps=()):
    """An injected module's variant: launch, its hash map, zeroing of every map named."""
    if "injected" not in ctx.a.kinds.split(","):
        return Variant(label, "injected", error="not run (--kinds)")
    try:
        mod, fn = ctx.injected(probe)
        table = hashhost.HashMap.from_module(mod, mapname)
        from bpf2ptx_host import Maps
        maps = Maps(mod)

        def zero():
            table.zero()
            for m in extra_maps:
                maps.zero(m)
        v = Variant(label, "injected", launch=lambda: fn(vec.grid, vec.block, vec.args()),
                    table=table, zero=zero, maps=maps)
        for n in table.notes:
            ctx.part.note(f"{label}: {n}")
        return v
    except Exception as e:  # noqa: BLE001
        ctx.part.note(f"{label}: not run: {e}")
        return Variant(label, "injected", error=str(e))


def twin_variant(ctx, label, kernel, vec, max_entries, map_type=1, arrays=False):
    if "twin" not in ctx.a.kinds.split(","):
        return Variant(label, "twin", error="not run (--kinds)")
    try:
        fn = ctx.twin(kernel)
        table = hashhost.HashMap.alloc(max_entries, map_type)
        extra = {}
        if arrays:
            hist = cupy.zeros(SHARDS * 64, dtype=cupy.uint64)
            missed = cupy.zeros(SHARDS * 16, dtype=cupy.uint64)
            extra = {"hist": hist, "missed": missed}
            args = table.twin_args() + (hist, missed)
        else:
            args = table.twin_args()

        def zero():
            table.zero()
            for x in extra.values():
                x.fill(0)
        return Variant(label, "twin", launch=lambda: fn(vec.grid, vec.block, vec.args() + args),
                       table=table, zero=zero, **extra)
    except Exception as e:  # noqa: BLE001
        ctx.part.note(f"{label}: not run: {e}")
        return Variant(label, "twin", error=str(e))


def counts_text(c):
    if c is None:
        return "no counts block"
    return f"count {c['count']}, full {c['full']}, busy {c['busy']}, evicted {c['evicted']}"


def rotate(xs, k):
    k %= max(len(xs), 1)
    return xs[k:] + xs[:k]


# ----------------------------------------------------------------------------- case 1

def case_churn(ctx, part, warp):
    a = ctx.a
    n = 1 << 20
    units = n // 32 if warp else n
    max_e = 65536 if warp else 1 << 21
    gran = "warp" if warp else "thread"
    probe = f"churn_{gran}"
    part.d["title"] = f"1. Churn per {gran}: vecadd 2^20, {units} {gran}s into a hash of {max_e} entries, {a.launches} launches"
    part.d["intro"].append(
        f"At entry each {gran} (key = global {gran} id) does `map_update_elem(&start, &key, &now, BPF_ANY)`; at exit "
        f"`lookup`, `hist[log2(now - *v)] += 1`, `map_delete_elem` (or `missed[0] += 1`). The map is zeroed once, then "
        f"{a.launches} launches run back to back without clearing it; after each launch the host checks that the "
        f"histogram grew by exactly {units}, `missed` is 0, the count word is 0 (map empty) and `full`/`busy` are 0; "
        f"after the last, that every slot is free with overflow count 0. {a.series} series (variants interleaved, "
        "order rotated, 3 native launches before each to wake the GPU); per-launch figures are medians over the "
        f"series, `{a.launches} launches` the median of the series' sums. `scrambled keys`: the same with key = "
        "MIX_KEY(id) = id x 0x9E3779B1 (mod 2^32): FNV-1a gives consecutive ids distinct home slots (no key ever "
        "leaves its home), scrambled ids collide as random keys do, so overflow counts and displaced keys come in.")
    vec = Vec(n)
    nat = ctx.native(vec)
    inj = hash_variant(ctx, "bpf2ptx inject", probe, "start", vec, extra_maps=("hist", "missed"))
    twin = twin_variant(ctx, "twin (spec protocol)", probe, vec, max_e, arrays=True)
    vs = [nat, inj, twin]
    if not warp:
        vs.append(twin_variant(ctx, "twin, count per lane (pre-ca7df46 protocol)", "churn_thread_perlane", vec, max_e,
                               arrays=True))
        vs[-1].extra["vs"] = twin.label
    inj_mix = hash_variant(ctx, "bpf2ptx inject, scrambled keys", probe + "_mix", "start", vec,
                           extra_maps=("hist", "missed"))
    twin_mix = twin_variant(ctx, "twin, scrambled keys", probe + "_mix", vec, max_e, arrays=True)
    vs += [inj_mix, twin_mix]
    inj.extra["vs"], inj_mix.extra["vs"] = twin.label, twin_mix.label

    def hist_sum(v):
        if v.kind == "injected":
            return int(v.extra["maps"].counts("hist").sum())
        return int(v.extra["hist"].sum())

    def missed_sum(v):
        if v.kind == "injected":
            return int(v.extra["maps"].counts("missed").sum())
        return int(v.extra["missed"].reshape(SHARDS, 16)[:, 0].sum())

    live = [v for v in vs if v.error is None]
    for v in live:
        try:
            v.zero()
            same = ctx.check_output(v, vec)
            detail = "output == native" if same else "OUTPUT DIFFERS from native"
            ok = same
            if v.table is not None:
                c = v.table.counts()
                h, m = hist_sum(v), missed_sum(v)
                ok &= h == units and m == 0 and (c is not None and c["count"] == 0 and c["full"] == 0 and c["busy"] == 0)
                detail += f"; hist sum {h} (want {units}), missed {m}; {counts_text(c)}"
            v.ok &= part.check(f"{v.label}: one launch from a zeroed map", ok, detail)
        except Exception as e:  # noqa: BLE001
            v.error = f"{type(e).__name__}: {e}"
            part.check(f"{v.label}: one launch", False, v.error)
    live = [v for v in vs if v.error is None]

    bad = {v.label: [] for v in live}
    probe_len = {}
    for s in range(a.series):
        for v in rotate(live, s):
            v.zero()
            for _ in range(3):
                nat.launch()
            cupy.cuda.Device().synchronize()
            prev = 0
            times = []
            for launch in range(1, a.launches + 1):
                times.append(ctx.timed(v.launch))
                if v.table is None:
                    continue
                h, m, c = hist_sum(v), missed_sum(v), v.table.counts()
                probs = []
                if h - prev != units:
                    probs.append(f"hist +{h - prev}")
                if m:
                    probs.append(f"missed {m}")
                if c is None:
                    probs.append("no counts block")
                else:
                    if c["count"]:
                        probs.append(f"count {c['count']}")
                    if c["full"] or c["busy"]:
                        probs.append(f"full {c['full']} busy {c['busy']}")
                if probs and len(bad[v.label]) < 5:
                    bad[v.label].append(f"series {s + 1} launch {launch}: " + ", ".join(probs))
                prev = h
            v.times.append(times)
            if v.table is not None:
                r = v.table.check(n_full=0)
                if not r.ok and len(bad[v.label]) < 8:
                    bad[v.label].append(f"series {s + 1} after launch {a.launches}: {r.text}")
            print(f"[time] series {s + 1} {v.label}: launch 1 {times[0]:.4f} ms, launch {a.launches} "
                  f"{times[-1]:.4f} ms, sum {sum(times):.2f} ms", flush=True)
            part.save()
    for v in live:
        if v.table is not None:
            v.ok &= part.check(f"{v.label}: every launch of every series (hist +{units}, missed 0, map empty, "
                               f"full 0, busy 0) and a clean table after the last",
                               not bad[v.label], "; ".join(bad[v.label]) or "all launches exact")
    # the tables are empty after each launch, so how often the keys' homes collide is
    # computed on the host
    ids = np.arange(units, dtype=np.uint64)
    for mix, lbl in ((False, "ids"), (True, "scrambled")):
        k = (ids * np.uint64(0x9E3779B1) & np.uint64(0xFFFFFFFF)) if mix else ids
        homes = hashhost.fnv1a_u32(k.astype(np.uint32)) & np.uint64(hashhost.slots_for(max_e) - 1)
        probe_len[lbl] = int(np.unique(homes).size)
    part.note(f"distinct home slots of the {units} keys in {hashhost.slots_for(max_e)} slots: "
              f"{probe_len['ids']} with the ids as keys, {probe_len['scrambled']} scrambled")

    stats = {}
    for v in live:
        arr = np.array(v.times)
        med = np.median(arr, axis=0)
        stats[v.label] = {"l1": float(med[0]), "lN": float(med[-1]), "first10": float(med[:10].mean()),
                          "last10": float(med[-10:].mean()), "total": float(np.median(arr.sum(axis=1))),
                          "per_launch": [round(float(x), 5) for x in med]}
    part.d["raw"]["churn"] = stats
    nat_total = stats.get(nat.label, {}).get("total")
    rows = []
    for v in vs:
        if v.label not in stats:
            rows.append([v.label, "-", "-", "-", "-", "-", "-", "-", "-", v.error or "failed"])
            continue
        st = stats[v.label]
        ref = stats.get(v.extra.get("vs", ""), {}).get("total")
        rows.append([v.label, fmt_ms(st["l1"]), fmt_ms(st["lN"]), fmt_x(st["lN"] / st["l1"]),
                     fmt_ms(st["first10"]), fmt_ms(st["last10"]), f"{st['total']:.3f}",
                     fmt_x(ratio(st["total"], ref)), fmt_x(ratio(st["total"], nat_total)),
                     "ok" if v.ok else "**FAIL**"])
    k = min(10, a.launches)
    part.table(f"{a.launches} launches of vecadd 2^20 (ms)",
               ["variant", "launch 1", f"launch {a.launches}", f"{a.launches}th / 1st", f"mean 1-{k}",
                f"mean {a.launches - k + 1}-{a.launches}", f"{a.launches} launches", "vs twin", "vs native", "checks"],
               rows)
    pick = [p for p in [1, 2, 10, 25, 50, 75, a.launches] if p <= a.launches]
    pick = sorted(set(pick))
    part.table("per-launch medians (ms) at launches " + ", ".join(map(str, pick)),
               ["variant"] + [str(p) for p in pick],
               [[lbl] + [fmt_ms(st["per_launch"][p - 1]) for p in pick] for lbl, st in stats.items()])
    for v, what in ((inj, ""), (inj_mix, ", scrambled keys")):
        si = stats.get(v.label)
        ref = stats.get(v.extra["vs"], {}).get("total")
        part.target(f"churn per {gran}{what}: injected launch {a.launches} / launch 1",
                    si["lN"] / si["l1"] if si else None, 1.1, "launch 1", valid=v.ok)
        part.target(f"churn per {gran}{what}: injected {a.launches} launches / twin",
                    ratio(si["total"], ref) if si else None, 1.5, "twin", valid=v.ok)
    for v in (twin, twin_mix):
        st = stats.get(v.label)
        if st:
            part.note(f"{v.label}: launch {a.launches} / launch 1 = {st['lN'] / st['l1']:.3f}x, "
                      f"mean of the last {k} / the first {k} = {st['last10'] / st['first10']:.3f}x")


def case_warp_split(ctx, part):
    """Diagnostic of churn per warp: how many lanes each per-warp probe run stands for."""
    n = 1 << 20
    warps = n // 32
    part.d["title"] = "1c. Per-warp probes: do warps reach the exit probe whole? (diagnostic of case 1a)"
    part.d["intro"].append(
        "probes/diag_warp.bpf.c is churn per warp plus, at entry and at exit, `lanes[popcount(get_active_mask())] += 1` "
        "(the lanes the per-warp run stands for); probes/diag_noop.bpf.c only counts, with no map update at entry. "
        f"One launch of vecadd 2^20 each ({warps} warps, all full). A warp that reaches a site whole adds 1 to "
        "lanes[32]; one that arrives split runs the probe once per piece.")
    vec = Vec(n)
    from bpf2ptx_host import Maps
    rows = []
    for probe, what in (("diag_warp", "entry updates the hash (as churn_warp)"), ("diag_noop", "entry only counts")):
        try:
            mod, fn = ctx.injected(probe)
            maps = Maps(mod)
            for m in (("lanes_in", "lanes_out", "missed", "start") if probe == "diag_warp" else ("lanes_in", "lanes_out")):
                maps.zero(m)
            fn(vec.grid, vec.block, vec.args())
            cupy.cuda.Device().synchronize()
            hist = {}
            for m in ("lanes_in", "lanes_out"):
                v = maps.counts(m)
                hist[m] = {int(i): int(v[i]) for i in np.nonzero(v)[0]}
            txt = {m: ", ".join(f"[{k}]={c}" for k, c in sorted(h.items())) for m, h in hist.items()}
            rows.append([probe, what, txt["lanes_in"], txt["lanes_out"]])
            part.check(f"{probe}: every warp runs the entry probe once, for 32 lanes", hist["lanes_in"] == {32: warps},
                       txt["lanes_in"])
            part.check(f"{probe}: every warp runs the exit probe once, for 32 lanes", hist["lanes_out"] == {32: warps},
                       txt["lanes_out"])
        except Exception as e:  # noqa: BLE001
            rows.append([probe, what, "-", f"not run: {e}"])
            part.check(f"{probe}", False, str(e))
    part.table("lanes per per-warp run (popcount of get_active_mask: runs)",
               ["probe", "entry probe", "at entry", "at exit"], rows)


# ----------------------------------------------------------------------------- case 2

def case_overfull(ctx, part, lru):
    a = ctx.a
    n = 1 << 20
    small = 4096
    kind = "LRU hash (9)" if lru else "hash (1)"
    part.d["title"] = (f"2{'b' if lru else 'a'}. Over-full {kind}: 2^20 distinct keys into {small} entries, "
                       "vs into 2^20 entries")
    part.d["intro"].append(
        f"Every thread of vecadd 2^20 inserts its key (global thread id, value VALUE_OF(key), BPF_ANY) at entry into a "
        f"{kind} of {small} entries, and, for reference, into a hash of 2^20 entries (room for every key). Each timed "
        f"launch starts from a zeroed map; median of {a.reps} launches (round robin after {a.warmup} warm-up rounds). "
        "The checks walk the storage after one launch: live keys (state 2), distinct keys, values, every overflow "
        "count equal to the number of live keys whose path passes the slot, no lock held, no busy slot, the count "
        "word, and the counts block summed over its 32 shards.")
    vec = Vec(n)
    sprobe = "overfull_lru" if lru else "overfull_small"
    vs = [ctx.native(vec),
          hash_variant(ctx, f"bpf2ptx inject, {small} entries", sprobe, "keys", vec),
          hash_variant(ctx, "bpf2ptx inject, 2^20 entries", "overfull_room", "keys", vec),
          twin_variant(ctx, f"twin, {small} entries", "overfull_lru" if lru else "overfull_hash", vec, small,
                       map_type=9 if lru else 1),
          twin_variant(ctx, "twin, 2^20 entries", "overfull_hash", vec, n),
          twin_variant(ctx, f"twin, {small} entries, reservation before the lock (abi.md ca7df46)",
                       "overfull_lru_early" if lru else "overfull_hash_early", vec, small, map_type=9 if lru else 1)]
    for v in vs[1:]:
        v.extra["small"] = "4096" in v.label
    first = {}
    for v in [x for x in vs if x.error is None]:
        try:
            v.zero()
            same = ctx.check_output(v, vec)
            if v.table is None:
                part.check(f"{v.label}: output", same, "reference" if same else "differs")
                continue
            c = v.table.counts()
            if v.extra["small"]:
                r = v.table.check(n_full=small, key_below=n, value_fn=value_of)
                if lru:
                    cok = c is not None and c["full"] == 0 and c["busy"] == 0 and c["evicted"] == n - small
                    want = f"want full 0, busy 0, evicted {n - small}"
                else:
                    cok = c is not None and c["full"] == n - small and c["busy"] == 0 and c["evicted"] == 0
                    want = f"want full {n - small}, busy 0"
            else:
                r = v.table.check(keys=n, value_fn=value_of)
                cok = c is not None and c["full"] == 0 and c["busy"] == 0
                want = "want full 0, busy 0"
            first[v.label] = (c, r.figures)
            v.ok &= part.check(f"{v.label}: one launch from a zeroed map", same and r.ok and cok,
                               f"{'output == native' if same else 'OUTPUT DIFFERS'}; {r.text}; {counts_text(c)} ({want})")
            if lru and v.extra["small"] and c is not None:
                part.check(f"{v.label}: evicted + busy = 2^20 - {small} (every refused insert evicted or counted)",
                           c["evicted"] + c["busy"] == n - small, f"{c['evicted']} + {c['busy']}")
        except Exception as e:  # noqa: BLE001
            v.error = f"{type(e).__name__}: {e}"
            part.check(f"{v.label}: one launch", False, v.error)
    live = [v for v in vs if v.error is None]
    reps_counts = {v.label: [] for v in live}
    for r in range(a.warmup + a.reps):
        for v in rotate(live, r):
            v.zero()
            t = ctx.timed(v.launch)
            if r >= a.warmup:
                v.times.append(t)
                if v.table is not None:
                    reps_counts[v.label].append(v.table.counts())
        part.save()
    for v in live:
        cs = [c for c in reps_counts[v.label] if c is not None]
        if cs:
            busy = [c["busy"] for c in cs]
            stable = all(c == cs[0] for c in cs)
            part.note(f"{v.label}: counts over the {len(cs)} timed launches: "
                      + (f"all {counts_text(cs[0])}" if stable else
                         f"busy min {min(busy)} max {max(busy)}; last {counts_text(cs[-1])}"))
    med = {v.label: float(np.median(v.times)) for v in live if v.times}
    part.d["raw"]["medians"] = med
    nat = med.get(vs[0].label)
    rows = []
    for i, v in enumerate(vs):
        m = med.get(v.label)
        ref = None
        if v.kind != "native" and v.extra.get("small"):
            ref = med.get(vs[2].label if v.kind == "injected" else vs[4].label)
        twin_of = {1: 3, 2: 4}.get(i)
        c, fig = first.get(v.label, (None, {}))
        rows.append([v.label, fmt_ms(m), str(len(v.times)), fmt_x(ratio(m, nat)), fmt_x(ratio(m, ref)),
                     fmt_x(ratio(m, med.get(vs[twin_of].label))) if twin_of else "-",
                     counts_text(c) if c else "-",
                     f"{fig.get('mean_probe', 0):.2f} / {fig.get('max_probe', 0)}" if fig else "-",
                     v.error or ("ok" if v.ok else "**FAIL**")])
    part.table("vecadd 2^20 with the insert probe (ms)",
               ["variant", "median ms", "n", "vs native", "vs 2^20 entries", "vs twin", "counts (first launch)",
                "probe mean / max", "checks"], rows)
    # Issue 12's 2x bound is the plain hash's (a refused insert is O(1) from the count);
    # an LRU insert into a full table evicts, and what the issue asks of it is 4096 keys
    # kept with no failure, which the checks above decide. Its ratio is reported.
    if lru:
        r = ratio(med.get(vs[1].label), med.get(vs[2].label))
        if r is not None:
            part.note(f"injected {small} entries / injected 2^20 entries = {r:.3f}x (every insert "
                      "past 4096 evicts; the issue bounds the plain hash's cost, the LRU's keys)")
    else:
        part.target(f"over-full {kind}: injected {small} entries / injected 2^20 entries",
                    ratio(med.get(vs[1].label), med.get(vs[2].label)), 2.0, "room for every key",
                    valid=vs[1].ok and vs[2].ok)
    t = ratio(med.get(vs[3].label), med.get(vs[4].label))
    if t is not None:
        part.note(f"twin {small} entries / twin 2^20 entries = {t:.3f}x")


# ----------------------------------------------------------------------------- case 3

def case_published(ctx, part):
    a = ctx.a
    n = 1 << 24
    max_e = 1024
    part.d["title"] = "3. Probes as published (cuda-counter): vecadd 2^24, 1024 entries"
    part.d["intro"].append(
        "At entry every thread (key = global thread id): `v = lookup(&counts, &key); if (v) __sync_fetch_and_add(v, 1); "
        "else map_update_elem(&counts, &key, &one, BPF_NOEXIST)`, into a hash of 1024 entries. `fresh`: each timed "
        f"launch from a zeroed map (median of {a.reps}); `accumulating`: {a.reps} launches without clearing (the "
        "published pattern: after the first launch the 1024 stored keys are found and counted, every other insert is "
        "refused from the count word).")
    vec = Vec(n)
    vs = [ctx.native(vec), hash_variant(ctx, "bpf2ptx inject", "published", "counts", vec),
          twin_variant(ctx, "twin", "published", vec, max_e),
          twin_variant(ctx, "twin, reservation before the lock (abi.md ca7df46)", "published_early", vec, max_e)]
    for v in [x for x in vs if x.error is None]:
        try:
            v.zero()
            same = ctx.check_output(v, vec)
            if v.table is None:
                part.check(f"{v.label}: output", same, "reference")
                continue
            c = v.table.counts()
            r = v.table.check(n_full=max_e, key_below=n, value_eq=1)
            cok = c is not None and c["full"] == n - max_e and c["busy"] == 0
            v.ok &= part.check(f"{v.label}: one launch from a zeroed map: 1024 keys, each value 1, full = 2^24 - 1024",
                               same and r.ok and cok, f"{'output == native' if same else 'OUTPUT DIFFERS'}; {r.text}; "
                               f"{counts_text(c)}")
        except Exception as e:  # noqa: BLE001
            v.error = f"{type(e).__name__}: {e}"
            part.check(f"{v.label}: one launch", False, v.error)
    live = [v for v in vs if v.error is None]
    for r in range(a.warmup + a.reps):
        for v in rotate(live, r):
            v.zero()
            t = ctx.timed(v.launch)
            if r >= a.warmup:
                v.times.append(t)
    acc = {}
    for v in live:
        v.zero()
        ts = [ctx.timed(v.launch) for _ in range(a.reps)]
        acc[v.label] = float(np.median(ts[1:])) if len(ts) > 1 else float(ts[0])
        if v.table is not None:
            c = v.table.counts()
            r = v.table.check(n_full=max_e, key_below=n, value_eq=a.reps)
            cok = c is not None and c["full"] == a.reps * (n - max_e) and c["busy"] == 0
            v.ok &= part.check(f"{v.label}: after {a.reps} launches without clearing: 1024 keys, each value {a.reps}, "
                               f"full = {a.reps} x (2^24 - 1024)", r.ok and cok, f"{r.text}; {counts_text(c)}")
        part.save()
    med = {v.label: float(np.median(v.times)) for v in live if v.times}
    part.d["raw"].update({"fresh": med, "accumulating": acc})
    nat, nat_acc = med.get(vs[0].label), acc.get(vs[0].label)
    tw, tw_acc = med.get(vs[2].label), acc.get(vs[2].label)
    rows = []
    for v in vs:
        m, ma = med.get(v.label), acc.get(v.label)
        rows.append([v.label, fmt_ms(m), fmt_x(ratio(m, nat)), fmt_x(ratio(m, tw)) if v.kind == "injected" else "-",
                     fmt_ms(ma), fmt_x(ratio(ma, nat_acc)),
                     fmt_x(ratio(ma, tw_acc)) if v.kind == "injected" else "-",
                     v.error or ("ok" if v.ok else "**FAIL**")])
    part.table("vecadd 2^24 (ms)", ["variant", "fresh median", "vs native", "vs twin", "accumulating median",
                                    "vs native", "vs twin", "checks"], rows)
    part.target("as published: injected (fresh) / native vecadd 2^24", ratio(med.get(vs[1].label), nat), 2.0, "native",
                valid=vs[1].ok)
    part.target("as published: injected (accumulating) / native vecadd 2^24",
                ratio(acc.get(vs[1].label), nat_acc), 2.0, "native", valid=vs[1].ok)


# ----------------------------------------------------------------------------- case 4

def mix_keys(n):
    """probes/common.h MIX_KEY of the ids 0..n-1."""
    return (np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B1) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def case_insert(ctx, part):
    a = ctx.a
    n = 1 << 22
    part.d["title"] = "4. Insert and update throughput: 2^22 distinct keys into 2^22 entries (2^23 slots, load 1/2)"
    part.d["intro"].append(
        "Insert: every thread of vecadd 2^22 inserts its key (global thread id, VALUE_OF(key), BPF_ANY) at entry; each "
        "timed launch from a zeroed map. Update: the same keys replaced with BPF_EXIST (value ~VALUE_OF(key)) in a "
        "table the insert built (the injected update module gets a device copy of the injected insert module's "
        f"table and counts block). Medians of {a.reps} launches, round robin. Mkeys/s = 2^22 / time; `net` subtracts "
        "native vecadd 2^22. `scrambled keys`: key = MIX_KEY(thread id): thread ids have distinct FNV-1a homes "
        "(every key at its home, probe length 1), scrambled ones collide as random keys do.")
    vec = Vec(n)
    nat = ctx.native(vec)
    mk = mix_keys(n)
    inj = hash_variant(ctx, "insert: bpf2ptx inject", "insert", "table", vec)
    twin = twin_variant(ctx, "insert: twin (spec protocol)", "insert_any", vec, n)
    perlane = twin_variant(ctx, "insert: twin, count per lane (pre-ca7df46 protocol)", "insert_any_perlane", vec, n)
    inj_m = hash_variant(ctx, "insert: bpf2ptx inject, scrambled keys", "insert_mix", "table", vec)
    twin_m = twin_variant(ctx, "insert: twin, scrambled keys", "insert_any_mix", vec, n)
    for v, ref, mix in ((inj, twin, False), (twin, None, False), (perlane, twin, False), (inj_m, twin_m, True),
                        (twin_m, None, True)):
        v.extra["vs"] = ref.label if ref else None
        v.extra["mix"] = mix
    ins = [nat, inj, twin, perlane, inj_m, twin_m]
    for v in [x for x in ins if x.error is None]:
        try:
            v.zero()
            same = ctx.check_output(v, vec)
            if v.table is None:
                part.check(f"{v.label}: output", same, "reference")
                continue
            c = v.table.counts()
            r = v.table.check(key_set=mk, value_fn=value_of) if v.extra["mix"] else \
                v.table.check(keys=n, value_fn=value_of)
            cok = c is not None and c["full"] == 0 and c["busy"] == 0
            v.ok &= part.check(f"{v.label}: one launch from a zeroed map: exactly the 2^22 keys, their values",
                               same and r.ok and cok,
                               f"{'output == native' if same else 'OUTPUT DIFFERS'}; {r.text}; {counts_text(c)}")
            v.extra["fig"] = r.figures
        except Exception as e:  # noqa: BLE001
            v.error = f"{type(e).__name__}: {e}"
            part.check(f"{v.label}: one launch", False, v.error)
    live = [v for v in ins if v.error is None]
    for r in range(a.warmup + a.reps):
        for v in rotate(live, r):
            v.zero()
            t = ctx.timed(v.launch)
            if r >= a.warmup:
                v.times.append(t)
    part.save()

    # update: each on a table its insert variant fills with one more launch
    def injected_update(label, probe, src, mix):
        u = hash_variant(ctx, label, probe, "table", vec)
        if u.error is None and src.error is None:
            src.zero()
            src.launch()
            u.table.copy_from(src.table)
        elif u.error is None:
            u.error = "its insert module is not available to fill the table"
        u.extra["mix"] = mix
        return u

    def twin_update(label, kernel, src, mix):
        if src.error is not None:
            return Variant(label, "twin", error=src.error, mix=mix)
        try:
            fn = ctx.twin(kernel)
            src.zero()
            src.launch()
            args = src.table.twin_args()
            return Variant(label, "twin", launch=lambda: fn(vec.grid, vec.block, vec.args() + args),
                           table=src.table, mix=mix)
        except Exception as e:  # noqa: BLE001
            return Variant(label, "twin", error=str(e), mix=mix)

    u_nat = ctx.native(vec, "native (nvcc PTX), update round")
    u_inj = injected_update("update: bpf2ptx inject", "update", inj, False)
    u_twin = twin_update("update: twin (spec protocol)", "update_exist", twin, False)
    u_inj_m = injected_update("update: bpf2ptx inject, scrambled keys", "update_mix", inj_m, True)
    u_twin_m = twin_update("update: twin, scrambled keys", "update_exist_mix", twin_m, True)
    u_inj.extra["vs"], u_inj_m.extra["vs"] = u_twin.label, u_twin_m.label
    upd = [u_nat, u_inj, u_twin, u_inj_m, u_twin_m]

    def upd_check(v):
        return v.table.check(key_set=mk, value_fn=not_value_of) if v.extra["mix"] else \
            v.table.check(keys=n, value_fn=not_value_of)
    for v in upd[1:]:
        if v.error is not None:
            part.check(f"{v.label}", False, v.error)
            continue
        try:
            same = ctx.check_output(v, vec)
            c = v.table.counts()
            r = upd_check(v)
            cok = c is not None and c["count"] == n and c["full"] == 0 and c["busy"] == 0
            v.ok &= part.check(f"{v.label}: one launch: every value replaced, keys and count unchanged",
                               same and r.ok and cok,
                               f"{'output == native' if same else 'OUTPUT DIFFERS'}; {r.text}; {counts_text(c)}")
            v.extra["fig"] = r.figures
        except Exception as e:  # noqa: BLE001
            v.error = f"{type(e).__name__}: {e}"
            part.check(f"{v.label}: one launch", False, v.error)
    live_u = [v for v in upd if v.error is None]
    for r in range(a.warmup + a.reps):
        for v in rotate(live_u, r):
            t = ctx.timed(v.launch)
            if r >= a.warmup:
                v.times.append(t)
    for v in live_u[1:]:
        r = upd_check(v)
        v.ok &= part.check(f"{v.label}: table after the timed launches", r.ok, r.text)

    med = {v.label: float(np.median(v.times)) for v in ins + upd if v.times}
    part.d["raw"]["medians"] = med
    t_nat = med.get(nat.label)
    rows = []
    for v in ins + upd[1:]:
        m = med.get(v.label)
        mk_s = n / (m * 1e3) if m else None
        net = n / ((m - t_nat) * 1e3) if m and t_nat and m > t_nat else None
        fig = v.extra.get("fig", {})
        rows.append([v.label, fmt_ms(m), fmt_x(ratio(m, t_nat)),
                     fmt_x(ratio(m, med.get(v.extra.get("vs") or ""))),
                     "-" if mk_s is None or v.kind == "native" else f"{mk_s:.0f}",
                     "-" if net is None or v.kind == "native" else f"{net:.0f}",
                     f"{fig['mean_probe']:.3f} / {fig['max_probe']}" if fig else "-",
                     v.error or ("ok" if v.ok else "**FAIL**")])
    part.table("vecadd 2^22 (ms)", ["variant", "median ms", "vs native", "vs twin", "Mkeys/s", "Mkeys/s net",
                                    "probe mean / max", "checks"], rows)
    for v, what in ((inj, "insert"), (u_inj, "update (BPF_EXIST)"), (inj_m, "insert, scrambled keys"),
                    (u_inj_m, "update (BPF_EXIST), scrambled keys")):
        part.target(f"{what}: injected / twin", ratio(med.get(v.label), med.get(v.extra.get("vs") or "")), 1.2,
                    "twin", valid=v.ok)


def child(a):
    part = Part(a.child, a.result)
    t0 = time.time()
    try:
        ctx = Ctx(a, part)
        print(f"[{a.child}] GPU {part.d['device']['name']}, CuPy {cupy.__version__}", flush=True)
        if a.child == "churn_warp":
            case_churn(ctx, part, True)
        elif a.child == "warp_split":
            case_warp_split(ctx, part)
        elif a.child == "churn_thread":
            case_churn(ctx, part, False)
        elif a.child == "overfull":
            case_overfull(ctx, part, False)
        elif a.child == "overfull_lru":
            case_overfull(ctx, part, True)
        elif a.child == "published":
            case_published(ctx, part)
        elif a.child == "insert":
            case_insert(ctx, part)
        else:
            raise ValueError(f"no case {a.child}")
        part.d["done"] = True
    except Exception:  # noqa: BLE001
        part.d["error"] = traceback.format_exc()[-3000:]
        print(part.d["error"], file=sys.stderr, flush=True)
    part.d["elapsed_s"] = round(time.time() - t0, 1)
    part.save()
    return 0 if part.d["done"] else 1


# ========================================================================== parent side

def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"({e})"


def registers(build):
    """(module, kernel, registers, stack bytes) of every injected module (ptxas -v, sm_90)
    and of the twins (run.sh's twin.log)."""
    import glob
    import re
    rows = []

    def parse(text, module):
        kern = None
        for line in text.splitlines():
            m = re.search(r"Compiling entry function '([^']+)'", line)
            if m:
                kern = m.group(1)
            m = re.search(r"Used (\d+) registers.*?(\d+) bytes cumulative stack", line) or \
                re.search(r"Used (\d+) registers", line)
            if m and kern:
                rows.append((module, kern, int(m.group(1)), int(m.group(2)) if m.lastindex > 1 else 0))
                kern = None
    for f in sorted(glob.glob(os.path.join(build, "vecadd.*.ptx"))):
        try:
            out = subprocess.run(["ptxas", "-arch=sm_90", "-v", f, "-o", os.devnull], capture_output=True,
                                 text=True, timeout=120)
            parse(out.stderr + out.stdout, os.path.basename(f))
        except Exception:  # noqa: BLE001
            pass
    tl = os.path.join(build, "twin.log")
    if os.path.exists(tl):
        parse(open(tl).read(), "twin.cubin")
    return rows


def render(parts, a, env):
    dev = next((p["device"] for p in parts if p.get("device")), {})
    L = ["# Hash maps on the GPU (issue 12): churn, over-full, as published, insert/update\n"]
    L.append(f"Measured {env['date']} on {dev.get('name', '(GPU unknown)')} ({dev.get('sms', '?')} SMs, "
             f"compute capability {dev.get('cc', '?')}, L2 {dev.get('l2_mib', '?')} MiB), driver {env['driver']}, "
             f"{env['nvcc']}, CuPy {dev.get('cupy', '?')}; bpf2ptx `{env['bpf2ptx']}` ({env['bin']}); "
             f"repository {env['git']}.\n")
    L.append("Command (on the GPU machine, from the repository root):\n")
    L.append(f"```sh\n{a.command}\n```\n")
    L.append("`run.sh` builds `benches/gpu-hash/twin.cu` with `nvcc -cubin -arch=sm_90 -O3`, injects each probe of "
             "`benches/gpu-hash/probes/` into `examples/apps/vecadd.ptx` with `bpf2ptx inject`, then runs "
             f"`bench.py --build B --series {a.series} --launches {a.launches} --reps {a.reps} --warmup {a.warmup}`. "
             "Each case runs in its own process, which loads the native vecadd (nvcc PTX), the injected modules and "
             "the twins (hand-written CUDA C++ of the same protocol, specs/abi.md \"Hash maps\": hash_proto.cuh) "
             "together, checks exact results, and times every launch with CUDA events (variants interleaved). "
             "Maps stay in device memory; the host zeroes storage and counts block with CuPy between cases. "
             "The twins follow specs/abi.md \"Hash maps\" at ca7df46 with the changes of runtime-ptx/src/maps.rs at "
             "26f3c89 (hash_proto.cuh says which); rows marked `reservation before the lock (abi.md ca7df46)` "
             "keep the reservation of the spec text, before the home lock.\n")
    L.append("## Targets (issue 12, \"Must hold\")\n")
    L.append("| case | target | measured | limit | result |")
    L.append("|---|---|---:|---:|---|")
    nchecks = nfail = 0
    for p in parts:
        for t in p.get("targets", []):
            res = "not measured" if t["met"] is None else ("met" if t["met"] else "**MISSED**")
            if t["met"] is not None and not t.get("valid", True):
                res += ", but **its checks failed**"
            L.append(f"| {p['case']} | {t['what']} | {fmt_x(t['value'])} | <= {t['limit']}x {t['against']} | {res} |")
        nchecks += len(p.get("checks", []))
        nfail += sum(1 for c in p.get("checks", []) if not c["ok"])
    L.append("")
    failed_cases = [p["case"] for p in parts if not p.get("done")]
    L.append(f"Checks: {nchecks - nfail} passed, {nfail} failed" +
             (f"; cases that did not finish: {', '.join(failed_cases)}" if failed_cases else "") + ".\n")
    for p in parts:
        L.append(f"## {p.get('title') or p['case']}\n")
        for s in p.get("intro", []):
            L.append(s + "\n")
        for t in p.get("tables", []):
            L.append(f"{t['title']}:\n")
            L.append("| " + " | ".join(t["header"]) + " |")
            L.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(t["header"]))) + "|")
            for r in t["rows"]:
                L.append("| " + " | ".join(str(x).replace("|", "/") for x in r) + " |")
            L.append("")
        if p.get("checks"):
            L.append("Checks:\n")
            for c in p["checks"]:
                L.append(f"- {'ok' if c['ok'] else '**FAIL**'}: {c['what']}" + (f" — {c['detail']}" if c["detail"] else ""))
            L.append("")
        if p.get("notes"):
            L.append("Notes:\n")
            for n in p["notes"]:
                L.append(f"- {n}")
            L.append("")
        if p.get("error") or p.get("status"):
            L.append("Did not finish: " + (p.get("status") or "") + "\n")
            if p.get("error"):
                L.append("```text\n" + p["error"].strip()[-2000:] + "\n```\n")
        if "elapsed_s" in p:
            L.append(f"({p['elapsed_s']} s)\n")
    if env.get("regs"):
        L.append("## Registers per thread (ptxas -v, sm_90)\n")
        L.append("Occupancy follows: 256-thread blocks, 64K registers per SM (at most 32 registers for 2048 threads).\n")
        L.append("| module | kernel | registers | stack bytes |")
        L.append("|---|---|---:|---:|")
        for r in env["regs"]:
            L.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |")
        L.append("")
    return "\n".join(L) + "\n"


def parent(a):
    env = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
           "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1") or "?",
           "nvcc": sh("nvcc --version | tail -1") or "nvcc ?",
           "bpf2ptx": a.bpf2ptx or "?",
           "git": os.environ.get("BENCH_REV") or ("git HEAD there: " + sh(f"git -C {ROOT} log -1 --format='%h %cd' --date=short") +
                                                  (" (work tree modified)" if sh(f"git -C {ROOT} status --porcelain --untracked-files=no") else ""))}
    try:
        import hashlib
        with open(a.bpf2ptx, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:16]
        env["bin"] = (f"{sh(a.bpf2ptx + ' --version')}, sha256 {digest}, built "
                      f"{datetime.datetime.fromtimestamp(os.path.getmtime(a.bpf2ptx)).strftime('%Y-%m-%d %H:%M')}")
    except Exception:  # noqa: BLE001
        env["bin"] = "binary not readable"
    env["regs"] = registers(a.build)
    cases = [c for c in a.cases.split(",") if c]
    parts = []
    t_start = time.time()
    passthrough = ["--build", a.build, "--app", a.app, "--series", str(a.series), "--launches", str(a.launches),
                   "--reps", str(a.reps), "--warmup", str(a.warmup), "--kinds", a.kinds]
    for case in cases:
        left = a.budget - (time.time() - t_start)
        res = os.path.join(a.build, f"result.{case}.json")
        if os.path.exists(res):
            os.remove(res)
        if left < 15:
            parts.append({"case": case, "title": case, "status": "not run: the time budget (--budget) was spent"})
            continue
        timeout = min(CASE_TIMEOUT.get(case, 90) * a.timeout_scale, left)
        print(f"==== {case} (timeout {timeout:.0f} s)", flush=True)
        t0 = time.time()
        status = None
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", case, "--result", res]
                               + passthrough, timeout=timeout)
            if p.returncode != 0:
                status = f"the case's process exited with status {p.returncode}"
        except subprocess.TimeoutExpired:
            status = f"killed after {timeout:.0f} s (timeout)"
        part = {"case": case, "title": case}
        if os.path.exists(res):
            try:
                with open(res) as f:
                    part = json.load(f)
            except Exception as e:  # noqa: BLE001
                status = (status or "") + f"; its result file is unreadable ({e})"
        if status:
            part["status"] = status
            part["done"] = False
        part.setdefault("elapsed_s", round(time.time() - t0, 1))
        parts.append(part)
        report = render(parts, a, env)
        if a.out:
            os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
            with open(a.out, "w") as f:
                f.write(report)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(parts, f, indent=1)
    print(render(parts, a, env))
    print(f"report: {a.out}  ({time.time() - t_start:.0f} s)")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="folder with twin.cubin and vecadd.<probe>.ptx / .err")
    ap.add_argument("--app", default=os.path.join(ROOT, "examples", "apps", "vecadd.ptx"))
    ap.add_argument("--out", help="markdown report")
    ap.add_argument("--json", help="raw results of every case")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--series", type=int, default=5, help="churn: series of --launches launches per variant")
    ap.add_argument("--launches", type=int, default=100, help="churn: consecutive launches without clearing")
    ap.add_argument("--reps", type=int, default=30, help="timed launches per variant (other cases)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--kinds", default="native,injected,twin", help="variants to run (native always runs)")
    ap.add_argument("--budget", type=float, default=330.0, help="seconds for all cases together")
    ap.add_argument("--timeout-scale", type=float, default=1.0, help="multiplies each case's timeout")
    ap.add_argument("--command", default="python3 benches/gpu-hash/bench.py " + " ".join(sys.argv[1:]),
                    help="the command line the report quotes")
    ap.add_argument("--bpf2ptx", default="", help="the bpf2ptx binary that injected the probes (for the report)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)
    return parent(a)


if __name__ == "__main__":
    sys.exit(main())
