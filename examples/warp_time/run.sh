#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Inject examples/probes/warp_time.bpf.o into an example app and run the host program.
#     bash examples/warp_time/run.sh [vecadd|matmul]      (BPF2PTX=path/to/bpf2ptx)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
APP="${1:-vecadd}"
BPF2PTX="${BPF2PTX:-target/release/bpf2ptx}"
OUTDIR="${TMPDIR:-/tmp}"
set -x
"$BPF2PTX" inject examples/probes/warp_time.bpf.o --into "examples/apps/$APP.ptx" -o "$OUTDIR/$APP.warp_time.ptx"
python3 examples/warp_time/warp_time.py "$APP" "$OUTDIR/$APP.warp_time.ptx"
