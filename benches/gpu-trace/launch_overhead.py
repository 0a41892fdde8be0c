#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Issue 16, "Overhead": the host cost per launch of `bpf2ptx trace`. many_launches.cu
(100,000 launches of a one-warp kernel in bursts of 500, nvcc, static cudart) runs
untraced, traced with a probe that matches nothing (the interposer sees every launch,
instruments nothing), and traced with a matched empty entry probe, in interleaved rounds
on one GPU. Per run the app reports the median time to issue a launch (bursts shorter
than the launch queue, so host time) and the wall time per launch (synchronizes
included). The report: medians over rounds, and the differences to the untraced run.

    BPF2PTX=gpu-carry/bpf2ptx python3 benches/gpu-trace/launch_overhead.py [OUT.md] [ROUNDS]

needs nvcc and the interposer beside the bpf2ptx binary.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BPF2PTX = os.environ.get("BPF2PTX", "target/release/bpf2ptx")
LAUNCHES = 100000


def run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"issue_ns_per_launch ([\d.]+) wall_ns_per_launch ([\d.]+)", p.stderr)
    if p.returncode != 0 or not m:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    jit = re.findall(r"\((inject [\d.]+ ms, (?:cached JIT|JIT) [\d.]+ ms)\)", p.stderr)
    return p.stdout, float(m.group(1)), float(m.group(2)), jit


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else None
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    with tempfile.TemporaryDirectory() as tmp:
        app = os.path.join(tmp, "many_launches")
        subprocess.run(["nvcc", "-O2", "-gencode", "arch=compute_90,code=[sm_90,compute_90]",
                        os.path.join(HERE, "many_launches.cu"), "-o", app], check=True)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        kinds = {
            "untraced": [app, str(LAUNCHES)],
            "trace, probe matching nothing": [BPF2PTX, "trace", "-o", os.path.join(tmp, "s0"),
                                              os.path.join(HERE, "probes/nomatch.bpf.o"), "--",
                                              app, str(LAUNCHES)],
            "trace, matched empty probe": [BPF2PTX, "trace", "-o", os.path.join(tmp, "s1"),
                                           os.path.join(HERE, "probes/empty_entry.bpf.o"), "--",
                                           app, str(LAUNCHES)],
        }
        res = {k: ([], []) for k in kinds}
        stdout, jits = {}, {}
        for r in range(rounds):
            for k, cmd in kinds.items():
                so, issue, wall, jit = run(cmd, env)
                res[k][0].append(issue)
                res[k][1].append(wall)
                stdout.setdefault(k, so)
                if jit:
                    jits.setdefault(k, []).extend(jit)
    base_i = statistics.median(res["untraced"][0])
    base_w = statistics.median(res["untraced"][1])
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    lines = [
        f"GPU: {gpu}; {LAUNCHES:,} launches (+1,000 warm-up) per run, bursts of 500, "
        f"{rounds} interleaved rounds, medians over rounds.",
        "",
        "| run | issue ns/launch | + vs untraced | wall ns/launch | + vs untraced | stdout as untraced |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for k in kinds:
        i = statistics.median(res[k][0])
        w = statistics.median(res[k][1])
        lines.append(f"| {k} | {i:.0f} | {i - base_i:+.0f} | {w:.0f} | {w - base_w:+.0f} | "
                     f"{'yes' if stdout[k] == stdout['untraced'] else 'NO'} |")
    lines.append("")
    for k, j in jits.items():
        lines.append(f"first launch's instrumentation ({k}): {', '.join(sorted(set(j))[:4])}")
    text = "\n".join(lines)
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    ok = all(stdout[k] == stdout["untraced"] for k in kinds)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
