#!/usr/bin/env bash
# Issue 12's GPU measurements in one device call (about 8 minutes on an H200), from the
# repository root on the GPU machine:
#
#     BPF2PTX=gpu-carry/bpf2ptx OUT=DIR bash tests/gpu/issue12.sh
#
# 1. benches/gpu-hash/run.sh: the hash "Must hold" cases (churn per warp and per thread
#    over 100 launches, over-full hash and LRU, the published insert-or-increment probe,
#    insert/update throughput), injected vs the CUDA twin vs native, exact checks;
# 2. tests/gpu/matrix.py (SKIP_HOST_MAPS=1): every map kind, helper and ring check,
#    ring_live included (the drainer's figures printed: BPF2PTX_DRAIN_STATS=1);
# 3. benches/gpu/run.sh on vecadd: the plain `*v = *v + 1` counter against native and
#    the atomic counter (inject overhead);
# 4. tests/gpu/map_ops.py (regression) and tests/gpu/ring_live_check.sh (ring_live twice
#    with the drainer's figures, ring_wrap, ring_stress, the benchmark's ring rows).
# Each step's table and log go to $OUT; summary.txt has one line per step; results.tgz
# holds everything.
set -u
export BPF2PTX=${BPF2PTX:-./target/release/bpf2ptx} PYTHONUNBUFFERED=1
out=${OUT:-/tmp/issue12}
mkdir -p "$out"
. "$(dirname "${BASH_SOURCE[0]}")/steps.sh"
step hash 260 env REPORT="$out/hash-maps.md" bash benches/gpu-hash/run.sh "$out/hash-build" --budget 220
step matrix 150 env SKIP_HOST_MAPS=1 BPF2PTX_DRAIN_STATS=1 python3 tests/gpu/matrix.py "$out/matrix.md"
step overhead 120 env REPORT="$out/inject-overhead.md" bash benches/gpu/run.sh "$out/overhead-build" --apps-only vecadd
step map_ops 260 python3 tests/gpu/map_ops.py "$out/map_ops.md"
step rings 200 env OUT="$out/rings" RUNS=2 bash tests/gpu/ring_live_check.sh
finish
rc=$?
tar -czf "$out/results.tgz" -C "$out" --exclude=results.tgz --exclude='*-build' . 2>/dev/null
exit $rc
