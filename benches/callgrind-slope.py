#!/usr/bin/env python3
"""Instructions per call of one function in a criterion benchmark, by callgrind.

Runs the bench executable under `valgrind --tool=callgrind --toggle-collect=TOGGLE` twice,
with `--profile-time 1` and `--profile-time 3` (`--seconds`), and prints the slope: the instructions
collected between the two runs divided by the calls made between them. The slope removes
what both runs spend once (loading inputs, the first call, runtime text built once per
process), which a time measurement on a shared VM cannot separate from the per-call cost.

The calls of TOGGLE itself are not recorded (its caller runs with collection off), so they
are counted as the calls TOGGLE makes to COUNT, a function it calls a known number of
times per call (PER, default 1): for lowering, `FuncWriter::lower` runs once per function
of the program.

    python3 benches/callgrind-slope.py EXE BENCH --toggle '*write_string*' \\
        --count 'FuncWriter::lower' [--per N] [--seconds 1 3] [--out DIR]

BENCH is a criterion benchmark id (`lower/conformance/prime`), matched exactly. Prints
`BENCH  slope  (Ir and count of each run)`. Used by benches/results/refactor-criterion.md.
"""

import argparse
import fnmatch
import os
import re
import subprocess
import sys
import tempfile


def parse(path, toggle, count):
    """Instructions collected and calls from functions matching `toggle` to functions
    whose name ends with `count`, in a callgrind output file."""
    names = {}
    total = None
    cur = cfn = None
    calls = 0
    for line in open(path):
        if line.startswith("totals:"):
            total = int(line.split()[1])
            continue
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            kind, ident, name = m.groups()
            if name:
                names[ident] = name
            if kind == "fn":
                cur = names.get(ident, ident)
            else:
                cfn = names.get(ident, ident)
            continue
        if line.startswith("calls=") and cur and fnmatch.fnmatchcase(cur, toggle):
            if cfn and cfn.endswith(count):
                calls += int(line.split("=")[1].split()[0])
    if total is None:
        sys.exit(f"{path}: no totals line")
    return total, calls


def run(exe, bench, toggle, seconds, out):
    cmd = [
        "valgrind",
        "--tool=callgrind",
        f"--toggle-collect={toggle}",
        f"--callgrind-out-file={out}",
        exe,
        "--bench",
        "--profile-time",
        str(seconds),
        f"^{re.escape(bench)}$",
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("exe", help="the criterion bench executable (target/release/deps/lower-<hash>)")
    ap.add_argument("bench", help="benchmark id, matched exactly")
    ap.add_argument("--toggle", required=True, help="callgrind --toggle-collect pattern")
    ap.add_argument("--count", required=True, help="suffix of the callee counted per call")
    ap.add_argument("--per", type=int, default=1, help="calls of COUNT per call of TOGGLE")
    ap.add_argument("--out", help="keep the callgrind files in this folder")
    ap.add_argument(
        "--seconds",
        type=int,
        nargs=2,
        default=(1, 3),
        metavar=("SHORT", "LONG"),
        help="the two --profile-time values (default 1 3; longer where one call takes "
        "so long under valgrind that both runs make the same number of calls)",
    )
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="callgrind-slope.")
    os.makedirs(out, exist_ok=True)
    runs = []
    for seconds in a.seconds:
        path = os.path.join(out, f"{a.bench.replace('/', '_')}.{seconds}.out")
        run(a.exe, a.bench, a.toggle, seconds, path)
        runs.append(parse(path, a.toggle, a.count))
    (ir1, n1), (ir3, n3) = runs
    if n1 == n3:
        sys.exit(f"{a.bench}: both runs made {n1} calls of {a.count}; no slope")
    slope = (ir3 - ir1) / ((n3 - n1) / a.per)
    print(f"{a.bench}\t{slope:.0f}\t(Ir {ir1} / {ir3}, {a.count} {n1} / {n3}, per {a.per})")


if __name__ == "__main__":
    main()
