#!/usr/bin/env bash
# GPU check of rings drained while the kernel runs (issue 12), in one command. On the GPU
# machine, from the repository root:
#
#     BPF2PTX=gpu-carry/ring-live/bpf2ptx [BASE=gpu-carry/ring-live/bpf2ptx.base] \
#         [OUT=DIR] [RUNS=3] bash tests/gpu/ring_live_check.sh
#
# 1. `matrix.py` with ONLY=ring_live, RUNS times with $BPF2PTX (and once with $BASE, a
#    build from before the change, when given, to compare on the same machine), each run
#    printing what the live drainer did (BPF2PTX_DRAIN_STATS=1: passes, consumer
#    publishes, when the first and last records were taken);
# 2. `ring_wrap.py` (records across the ring's end, exact fits, nearly full rings);
# 3. `ring_stress.py` (the runtime's reserve on 1,048,576 threads, fixed and mixed sizes);
# 4. the ring rows of the runtime benchmark (`benches/gpu-runtime/run.sh --only ring`: ours
#    against the CUDA twin, checks included).
#
# Ends with one line of exit codes; exits 1 if any step of $BPF2PTX failed (the $BASE
# run may fail: it is the comparison).
set -uo pipefail
B="${BPF2PTX:-./target/release/bpf2ptx}"
BASE="${BASE:-}"
OUT="${OUT:-/tmp/ring-live-check}"
RUNS="${RUNS:-3}"
mkdir -p "$OUT"
export BPF2PTX_DRAIN_STATS=1 PYTHONUNBUFFERED=1
codes=()
fail=0
note() { codes+=("$1=$2"); [ "$3" = mine ] && [ "$2" != 0 ] && fail=1; }

if [ -n "$BASE" ]; then
	echo "== ring_live, base build ($BASE)"
	BPF2PTX="$BASE" ONLY=ring_live python3 tests/gpu/matrix.py "$OUT/ring_live.base.md"
	note live.base $? base
fi
for k in $(seq 1 "$RUNS"); do
	echo "== ring_live, run $k ($B)"
	BPF2PTX="$B" ONLY=ring_live python3 tests/gpu/matrix.py "$OUT/ring_live.$k.md"
	note "live.$k" $? mine
done
echo "== ring_wrap"
BPF2PTX="$B" python3 tests/gpu/ring_wrap.py "$OUT/ring_wrap.md" >"$OUT/ring_wrap.log" 2>&1
note wrap $? mine
grep -v "| ok |$" "$OUT/ring_wrap.log" | tail -5
echo "== ring_stress"
python3 tests/gpu/ring_stress.py bound
note stress $? mine
echo "== runtime benchmark, ring rows"
OUT="$OUT/bench" bash benches/gpu-runtime/run.sh --only ring >"$OUT/bench.log" 2>&1
note bench $? mine
grep -E "^ringbuf_output|FAIL|ERROR|all checks passed" "$OUT/bench.log" | tail -8
echo "exit codes: ${codes[*]}"
exit "$fail"
