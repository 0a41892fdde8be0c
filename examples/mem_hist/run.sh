#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Inject examples/probes/mem_hist.bpf.o into an example app and run the host program.
#     bash examples/mem_hist/run.sh [vecadd|matmul]      (BPF2PTX=path/to/bpf2ptx)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
APP="${1:-vecadd}"
BPF2PTX="${BPF2PTX:-target/release/bpf2ptx}"
OUTDIR="${TMPDIR:-/tmp}"
set -x
"$BPF2PTX" inject examples/probes/mem_hist.bpf.o --into "examples/apps/$APP.ptx" -o "$OUTDIR/$APP.mem_hist.ptx"
python3 examples/mem_hist/mem_hist.py "$APP" "$OUTDIR/$APP.mem_hist.ptx"
