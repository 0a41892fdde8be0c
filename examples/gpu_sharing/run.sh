#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# GPU sharing by time-slicing, seen from inside each process (examples/gpu_sharing/README.md):
# two copies of one nvcc-built app, each under its own `bpf2ptx trace` with
# examples/probes/gpu_sharing.bpf.o (a host/launch program and block entry/exit probes:
# per-block launch latency, per-launch spans, blocks per SM), run first one at a time and
# then both at once; summary.py compares the runs.
#
#     bash examples/gpu_sharing/run.sh [OUT_DIR] [LAUNCHES] [ITERS] [BLOCKS_PER_SM]
#
# BPF2PTX: the bpf2ptx binary (default target/release/bpf2ptx; the interposer
# libbpf2ptx_interposer.so beside it, or BPF2PTX_INTERPOSER). Needs nvcc (sm_90 or the
# GPU's own architecture through ARCH=NN) and python3.
# OUT_DIR (default $TMPDIR/gpu_sharing, else /tmp/gpu_sharing) gets, per run
# (alone-1, alone-2, shared-1, shared-2): RUN.jsonl (the snapshots, --format json),
# RUN.trace.json (--trace-events: each launch and its kernel's span, for Perfetto),
# RUN.out (the app's stdout), RUN.err (its stderr and trace's), and summary.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BPF2PTX="${BPF2PTX:-target/release/bpf2ptx}"
OUT="${1:-${TMPDIR:-/tmp}/gpu_sharing}"
LAUNCHES="${2:-3000}"
ITERS="${3:-20000}"
PER_SM="${4:-16}"
ARCH="${ARCH:-90}"
PROBES=examples/probes/gpu_sharing.bpf.o
mkdir -p "$OUT"
# One JIT cache for every run: the first run instruments and JITs the module, the
# others load the cached cubin (each run's stderr says which).
export XDG_CACHE_HOME="$OUT/cache"

nvcc -O2 -gencode "arch=compute_$ARCH,code=[sm_$ARCH,compute_$ARCH]" \
	examples/gpu_sharing/sharing_app.cu -o "$OUT/sharing_app"

# trace RUN [START_AT_MS]: one traced copy of the app.
trace() {
	"$BPF2PTX" trace --format json --interval 1s -o "$OUT/$1.jsonl" \
		--trace-events "$OUT/$1.trace.json" "$PROBES" -- \
		"$OUT/sharing_app" "$LAUNCHES" "$ITERS" "$PER_SM" "${2:-0}" \
		>"$OUT/$1.out" 2>"$OUT/$1.err"
}

echo "alone: copy 1, then copy 2"
for run in alone-1 alone-2; do
	trace "$run" || { echo "$run failed (exit $?): see $OUT/$run.err" >&2; exit 1; }
done
# Both at once, their measured loops starting at the same wall-clock time (3 s from now:
# past the warm-up launch of each, which may pay the JIT).
start=$(( $(date +%s%3N) + 3000 ))
echo "shared: both copies at once (measured loops start at $start ms)"
trace shared-1 "$start" &
p1=$!
trace shared-2 "$start" &
p2=$!
rc=0
wait "$p1" || rc=1
wait "$p2" || rc=1
[ "$rc" = 0 ] || echo "a shared run failed: see $OUT/shared-*.err" >&2

python3 examples/gpu_sharing/summary.py "$OUT" | tee "$OUT/summary.md"
exit "$rc"
