#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""The example's probe maps against a CPU model of its launches.

    check.py STDOUT MAPS

STDOUT is what app_probed printed (its `launch KERNEL n=N grid=G block=B` lines), MAPS
the file it wrote with PROBE_MAPS=MAPS (`KERNEL counts v0 v1 ...`, the `counts` map of
the kernel's module; each kernel is the only one of its .cu, so its index is 0). The
model, per kernel: launches = its launch lines; blocks = the sum of their grids; bytes
loaded and stored = what its code reads and writes per thread with i < n (vecadd: two
4-byte loads, one 4-byte store; scale: one and one) times n. Prints a table and exits 1
on any difference.
"""
import re
import sys

PER_THREAD = {"vecadd": (8, 4), "scale": (4, 4)}  # bytes (loaded, stored) per i < n
FIELDS = ("launches", "blocks", "bytes loaded", "bytes stored")


def model(stdout):
    m = {k: [0, 0, 0, 0] for k in PER_THREAD}
    for line in stdout.splitlines():
        g = re.fullmatch(r"launch (\w+) n=(\d+) grid=(\d+) block=(\d+)", line)
        if not g:
            continue
        k, n, grid = g.group(1), int(g.group(2)), int(g.group(3))
        ld, st = PER_THREAD[k]
        for i, v in enumerate((1, grid, ld * n, st * n)):
            m[k][i] += v
    return m


def measured(maps):
    got = {}
    for line in maps.splitlines():
        w = line.split()
        if len(w) >= 2 and w[1] == "counts":
            got[w[0]] = [int(x) for x in w[2:6]]
        elif len(w) >= 2:
            got[w[0]] = None
    return got


def main():
    stdout = open(sys.argv[1]).read()
    maps = open(sys.argv[2]).read()
    want, got = model(stdout), measured(maps)
    ok = True
    print("| kernel | value | CPU model | map | |")
    print("|---|---|---|---|---|")
    for k in PER_THREAD:
        g = got.get(k)
        for i, f in enumerate(FIELDS):
            v = "not instrumented" if g is None else g[i]
            same = g is not None and g[i] == want[k][i]
            ok &= same
            print(f"| {k} | {f} | {want[k][i]} | {v} | {'ok' if same else 'DIFFERS'} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
