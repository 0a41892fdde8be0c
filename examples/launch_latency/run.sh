#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Inject examples/probes/launch_latency.bpf.o into an example app and run the host program.
#     bash examples/launch_latency/run.sh [vecadd|matmul]      (BPF2PTX=path/to/bpf2ptx)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
APP="${1:-vecadd}"
BPF2PTX="${BPF2PTX:-target/release/bpf2ptx}"
OUTDIR="${TMPDIR:-/tmp}"
set -x
"$BPF2PTX" inject examples/probes/launch_latency.bpf.o --map launch=host --into "examples/apps/$APP.ptx" -o "$OUTDIR/$APP.launch_latency.ptx"
python3 examples/launch_latency/launch_latency.py "$APP" "$OUTDIR/$APP.launch_latency.ptx"
