#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The hash-map benchmark (issue 12, "Must hold") in one command, on a machine with an
# NVIDIA GPU, nvcc and python3 + CuPy:
#
#     bash benches/gpu-hash/run.sh [BUILD_DIR] [bench.py options...]
#
# 1. nvcc builds the CUDA twins (benches/gpu-hash/twin.cu -> twin.cubin, sm_90);
# 2. bpf2ptx inject merges each probe of benches/gpu-hash/probes into
#    examples/apps/vecadd.ptx (a probe it refuses is reported, the others still run);
# 3. bench.py checks and times native vecadd, the injected modules and the twins, case by
#    case, and writes the report (benches/results/hash-maps.md unless REPORT=... says
#    otherwise; the raw figures go to BUILD_DIR/hash-maps.json).
# BPF2PTX=path/to/bpf2ptx (default: target/release/bpf2ptx, else gpu-carry/bpf2ptx).
# About 2-4 minutes on an H200; bench.py keeps to --budget seconds (330) in all.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B="${TMPDIR:-/tmp}/bpf2ptx-gpu-hash"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then B="$1"; shift; fi
mkdir -p "$B"
BPF2PTX="${BPF2PTX:-}"
if [ -z "$BPF2PTX" ]; then
	if [ -x target/release/bpf2ptx ]; then BPF2PTX=target/release/bpf2ptx; else BPF2PTX=gpu-carry/bpf2ptx; fi
fi
REPORT="${REPORT:-benches/results/hash-maps.md}"
PROBES="churn_warp churn_warp_mix diag_warp diag_noop churn_thread churn_thread_mix overfull_small overfull_room overfull_lru published insert insert_mix update update_mix"
export PYTHONUNBUFFERED=1

echo "== nvcc twin.cu ($(nvcc --version | tail -1))"
rm -f "$B/twin.cubin"
nvcc -cubin -arch=sm_90 -O3 -Xptxas -v benches/gpu-hash/twin.cu -o "$B/twin.cubin" 2>"$B/twin.log" ||
	{ echo "nvcc failed:"; cat "$B/twin.log"; }
grep -E "Compiling entry|Used" "$B/twin.log" | paste - - | sed -E 's/ptxas info *: //g' || true

echo "== bpf2ptx inject ($BPF2PTX)"
for p in $PROBES; do
	rm -f "$B/vecadd.$p.ptx" "$B/vecadd.$p.err"
	if "$BPF2PTX" inject "benches/gpu-hash/probes/$p.bpf.o" --into examples/apps/vecadd.ptx \
		-o "$B/vecadd.$p.ptx" 2>"$B/vecadd.$p.err"; then
		echo "$p: ok"
	else
		echo "$p: inject failed: $(head -c 400 "$B/vecadd.$p.err")"
		rm -f "$B/vecadd.$p.ptx"
	fi
done

CMD="bash benches/gpu-hash/run.sh${*:+ $*}"
python3 benches/gpu-hash/bench.py --build "$B" --out "$REPORT" --json "$B/hash-maps.json" \
	--bpf2ptx "$BPF2PTX" --command "BPF2PTX=$BPF2PTX $CMD" "$@"
