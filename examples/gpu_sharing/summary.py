#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Alone vs shared: the summary of examples/gpu_sharing/run.sh's runs.

    python3 examples/gpu_sharing/summary.py OUT_DIR

OUT_DIR holds, per run RUN (alone-1, alone-2, shared-1, shared-2; any RUN.jsonl is
taken, alone-* first), RUN.jsonl (`bpf2ptx trace --format json` snapshots of
examples/probes/gpu_sharing.bpf.o), RUN.out (the app's stdout) and RUN.err (its stderr
with the `model` line, and trace's). Prints a markdown table, one row per run:

- blocks the probe counted vs the blocks the app launched (its `model` line);
- per-block start latency (launch call to the block's first instruction) percentiles,
  from the probe's histograms: the upper bound of the bucket that holds the percentile,
  2 us buckets below 2 ms (`lat_fine`), 100 us buckets above (`lat_coarse`);
- per launch, exact (from `spans`, keyed by the launch time): the first block's latency
  and the kernel's span (first block start to last block end);
- blocks per SM over the SMs that ran any (`sm_blocks`);
- the app's own round trip per launch (launch call to cudaStreamSynchronize's return),
  measured without bpf2ptx;

then how much the shared runs' measured windows overlapped (they shared the GPU only
there) and any lost events (early blocks, evicted spans).

Maps are read from the last snapshot (the lines whose `end` is set) wherever they are
in it: today one line per instrumented module with `maps`, later one instance per
process and device nested differently; every instance found is summed (different
modules or devices count different blocks), except `launches`, which host programs
share and which may be printed beside every module: the largest instance is taken.
Exit 1 when a run's files are missing or a run counted other than the blocks it launched.
"""
import json
import math
import os
import re
import statistics
import sys


def number(v):
    """A JSON value as an int: BTF integers are numbers, values without BTF hex strings."""
    return int(v, 16) if isinstance(v, str) else int(v)


def is_map(node):
    return isinstance(node, dict) and isinstance(node.get("name"), str) and "key_size" in node


def walk(node):
    """Every dict and list inside node, depth first."""
    yield node
    if isinstance(node, dict):
        for v in node.values():
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


def last_snapshot(path):
    """The lines of the last snapshot: those whose `end` is set (one per module today)."""
    lines = [json.loads(x) for x in open(path) if x.lstrip().startswith("{")]
    return [s for s in lines if s.get("end") is not None]


def instances(snap, name):
    """Every map called `name` anywhere in the snapshot's lines."""
    return [n for n in walk(snap) if is_map(n) and n["name"] == name]


def array(snap, name, combine=sum):
    """key -> value of an array, its instances combined (summed unless told)."""
    per_key = {}
    for m in instances(snap, name):
        for e in m.get("entries", []):
            per_key.setdefault(number(e["key"]), []).append(number(e["value"]))
    return {k: combine(v) for k, v in per_key.items()}


def histogram(snap, name):
    """[(min, max, count)] of a histogram map, buckets of every instance summed, sorted
    (min None: the underflow bucket, max None: the overflow one)."""
    buckets = {}
    for m in instances(snap, name):
        for b in m.get("histogram", {}).get("buckets", []):
            key = (b["min"], b["max"])
            buckets[key] = buckets.get(key, 0) + int(b["count"])
    return sorted(((lo, hi, n) for (lo, hi), n in buckets.items()),
                  key=lambda b: -math.inf if b[0] is None else b[0])


def bucket_at(buckets, p):
    """The (min, max) of the bucket holding the p-th percentile (nearest rank), or None."""
    total = sum(n for _, _, n in buckets)
    if total == 0:
        return None
    rank, seen = max(1, math.ceil(p / 100 * total)), 0
    for lo, hi, n in buckets:
        seen += n
        if seen >= rank:
            return lo, hi
    return None


def latency_pct(fine, coarse, p):
    """The p-th percentile of the blocks' start latency in us, as text: the upper bound
    of its bucket, from the fine histogram when it falls below the fine one's range."""
    c = bucket_at(coarse, p)
    if c is None:
        return "-"
    f = bucket_at(fine, p)
    if f is not None and f[1] is not None:
        return f"{f[1]}"
    if c[1] is None:
        return f">= {c[0]}"
    return f"{c[1]}"


def exact_pct(values, p):
    """Nearest-rank percentile of a list."""
    if not values:
        return None
    v = sorted(values)
    return v[max(1, math.ceil(p / 100 * len(v))) - 1]


def spans(snap):
    """Per launch (ns): first block latency and kernel span, from every `spans` instance."""
    first, span = [], []
    for m in instances(snap, "spans"):
        for e in m.get("entries", []):
            t0, v = number(e["key"]), e["value"]
            a, b = number(v["first_block_ns"]), number(v["last_block_ns"])
            if a >= t0:
                first.append(a - t0)
            if b >= a > 0:
                span.append(b - a)
    return first, span


def failures(snap):
    """(what, reason, count) of every failure counter of the last snapshot."""
    out = []
    for n in walk(snap):
        if isinstance(n, dict) and isinstance(n.get("failures"), list):
            out += [(f["what"], f["reason"], int(f["count"])) for f in n["failures"]]
    return out


def app(out_text, err_text):
    """What the app said: round trip percentiles, window, shape, and the blocks launched."""
    r = {}
    m = re.search(r"^roundtrip_us p50 ([\d.]+) p90 ([\d.]+) p99 ([\d.]+) max ([\d.]+)$",
                  out_text, re.M)
    if m:
        r["rt"] = [float(x) for x in m.groups()]
    m = re.search(r"^window_ns (\d+) (\d+)$", out_text, re.M)
    if m:
        r["window"] = (int(m.group(1)), int(m.group(2)))
    m = re.search(r"^shape (.*)$", out_text, re.M)
    if m:
        r["shape"] = m.group(1)
    models = re.findall(r"^model (\S+) launches (\d+) grid (\d+) block (\d+)$", err_text, re.M)
    r["launches"] = sum(int(l) for _, l, _, _ in models)
    r["blocks"] = sum(int(l) * int(g) for _, l, g, _ in models)
    return r


def us(ns):
    return "-" if ns is None else f"{ns / 1000:.1f}"


def run_names(out):
    names = sorted(f[:-len(".jsonl")] for f in os.listdir(out) if f.endswith(".jsonl"))
    return sorted(names, key=lambda n: (not n.startswith("alone"), n))


def summarize(out):
    rows, notes, bad, runs = [], [], 0, {}
    for name in run_names(out):
        try:
            snap = last_snapshot(os.path.join(out, name + ".jsonl"))
            out_text = open(os.path.join(out, name + ".out")).read()
            err_text = open(os.path.join(out, name + ".err")).read()
        except OSError as e:
            notes.append(f"{name}: {e}")
            bad += 1
            continue
        if not snap:
            notes.append(f"{name}: no last snapshot in {name}.jsonl (did the trace end?)")
            bad += 1
            continue
        a = app(out_text, err_text)
        fine, coarse = histogram(snap, "lat_fine"), histogram(snap, "lat_coarse")
        counted = sum(n for _, _, n in coarse)
        ok = counted == a["blocks"] and a["blocks"] > 0
        bad += not ok
        first, span = spans(snap)
        sm = {k: v for k, v in array(snap, "sm_blocks").items() if v}
        host_runs = array(snap, "launches", combine=max).get(0, 0)
        early = array(snap, "early").get(0, 0)
        lat = " / ".join(latency_pct(fine, coarse, p) for p in (50, 90, 99, 100))
        per_launch = " / ".join(us(exact_pct(first, p)) for p in (50, 99))
        spn = " / ".join(us(exact_pct(span, p)) for p in (50, 99))
        if sm:
            v = list(sm.values())
            smtxt = f"{min(v)} / {statistics.mean(v):.1f} / {max(v)} ({len(v)})"
        else:
            smtxt = "-"
        rt = a.get("rt")
        rttxt = f"{rt[0]:.1f} / {rt[2]:.1f}" if rt else "-"
        rows.append(f"| {name} | {counted} / {a['blocks']}{'' if ok else ' MISMATCH'} "
                    f"| {lat} | {per_launch} ({len(first)} launches) | {spn} | {smtxt} "
                    f"| {rttxt} |")
        if host_runs != a["launches"]:
            notes.append(f"{name}: the host program ran at {host_runs} launches, "
                         f"the app made {a['launches']}")
        if early:
            notes.append(f"{name}: {early} blocks started before the launch time they read "
                         "(overlapping launches); they are in no histogram")
        for what, reason, n in failures(snap):
            notes.append(f"{name}: {what}: {n} {reason}")
        a["per_launch"] = (exact_pct(first, 50), exact_pct(first, 99),
                           exact_pct(span, 50), exact_pct(span, 99))
        runs[name] = a
    print("# GPU sharing: alone vs shared\n")
    shapes = sorted({a["shape"] for a in runs.values() if "shape" in a})
    for s in shapes:
        print(f"app: {s} (+1 warm-up launch, counted by the probe too)\n")
    print("| run | blocks counted / launched | block start latency p50 / p90 / p99 / max (us) "
          "| first block per launch p50 / p99 (us) | kernel span p50 / p99 (us) "
          "| blocks per SM min / mean / max (SMs) | app round trip p50 / p99 (us) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(r)
    shared = [n for n in runs if n.startswith("shared") and "window" in runs[n]]
    if len(shared) == 2:
        (s1, e1), (s2, e2) = runs[shared[0]]["window"], runs[shared[1]]["window"]
        both = max(0, min(e1, e2) - max(s1, s2))
        print(f"\nshared runs' measured loops overlapped {both / 1e6:.1f} ms: "
              f"{100 * both / max(1, e1 - s1):.0f}% of {shared[0]}'s, "
              f"{100 * both / max(1, e2 - s2):.0f}% of {shared[1]}'s")
    contention = []
    for name in runs:
        if not name.startswith("shared-") or "alone-" + name[7:] not in runs:
            continue
        al, sh = runs["alone-" + name[7:]], runs[name]
        parts = []
        for what, k in (("first-block latency p50", 0), ("p99", 1), ("kernel span p50", 2),
                        ("p99", 3)):
            a, b = al["per_launch"][k], sh["per_launch"][k]
            if a is not None and b is not None:
                parts.append(f"{what} {us(a)} -> {us(b)} us" + (f" (x{b / a:.1f})" if a else ""))
        if "rt" in al and "rt" in sh:
            parts.append(f"app round trip p50 {al['rt'][0]:.1f} -> {sh['rt'][0]:.1f} us, "
                         f"p99 {al['rt'][2]:.1f} -> {sh['rt'][2]:.1f} us")
        contention.append(f"- copy {name[7:]}, alone -> shared: " + "; ".join(parts))
    if contention:
        print("\nper launch, alone -> shared:")
        for c in contention:
            print(c)
    print("\nlatency percentiles: the upper bound of the bucket holding them (2 us buckets "
          "below 2 ms, 100 us above); per-launch figures exact")
    for n in notes:
        print(f"- {n}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(summarize(sys.argv[1]))
