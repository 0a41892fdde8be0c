#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Per-block launch latency of an unmodified application under `bpf2ptx trace`: the host
# program of examples/probes/trace_latency.bpf.o stores each launch's time (on the GPU's
# clock) in a map the GPU entry probe reads.
#     bash examples/trace_latency/run.sh [LAUNCHES]      (BPF2PTX=path/to/bpf2ptx)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BPF2PTX="${BPF2PTX:-target/release/bpf2ptx}"
OUTDIR="${TMPDIR:-/tmp}"
set -x
nvcc -O2 -gencode 'arch=compute_90,code=[sm_90,compute_90]' examples/trace_latency/latency_app.cu -o "$OUTDIR/latency_app"
"$BPF2PTX" trace --trace-events "$OUTDIR/trace_latency.json" examples/probes/trace_latency.bpf.o -- "$OUTDIR/latency_app" "${1:-20}"
