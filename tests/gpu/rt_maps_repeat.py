#!/usr/bin/env python3
"""rt_maps's exactly-sized hash, launch after launch: the race that a refusal can lose.

    BPF2PTX=./target/release/bpf2ptx python3 tests/gpu/rt_maps_repeat.py [RUNS]

tests/corpus/src/rt_maps's `hash` (4096 entries) gets the 4096 keys of 1,048,576 threads,
256 increments each, through lookup / insert-if-missing / add. A map sized for exactly
its keys must refuse nothing: `full` and `busy` stay 0 and every key counts 256. A refusal
that rests on a stale walk shows here as a few refusals in a million (9-13 per launch in
the withdrawn miss memo of session 6), and only in some launches, so this runs the probe
RUNS times (default 20), each a fresh process and map, and exits 1 if any launch lost one.
"""
import json
import os
import subprocess
import sys

B = os.environ.get("BPF2PTX", "./target/release/bpf2ptx")
G, BL = 4096, 256
N = G * BL


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import val  # noqa: E402


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    bad = 0
    for r in range(runs):
        cmd = [B, "run", "tests/corpus/obj/rt_maps.v3.o", "--target", "sm_90", "--grid", str(G),
               "--block", str(BL), "--maps"]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"run {r}: exit {out.returncode}: {out.stderr[-2000:]}")
            return 1
        _, _, rest = out.stdout.partition("\n")
        while rest.startswith("printk: "):
            rest = rest.partition("\n")[2]
        h = {m["name"]: m for m in json.loads(rest)}["hash"]
        keys = sorted(val(e["key"]) for e in h["entries"])
        values = {val(e["value"]) for e in h["entries"]}
        ok = keys == list(range(4096)) and values == {N // 4096} and h["counts"] == {"full": 0, "busy": 0}
        lost = N - sum(val(e["value"]) for e in h["entries"])
        print(f"run {r}: keys {len(keys)}, values {sorted(values)[:4]}, counts {h['counts']}, "
              f"increments lost {lost}: {'ok' if ok else 'FAIL'}", flush=True)
        bad += not ok
    print(f"{runs - bad} of {runs} launches exact")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
