#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Inject examples/probes/blocks_per_sm.bpf.o into an example app and run the host program.
#     bash examples/blocks_per_sm/run.sh [vecadd|matmul]      (BPF2PTX=path/to/bpf2ptx)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
APP="${1:-vecadd}"
BPF2PTX="${BPF2PTX:-target/release/bpf2ptx}"
OUTDIR="${TMPDIR:-/tmp}"
set -x
"$BPF2PTX" inject examples/probes/blocks_per_sm.bpf.o --into "examples/apps/$APP.ptx" -o "$OUTDIR/$APP.blocks_per_sm.ptx"
python3 examples/blocks_per_sm/blocks_per_sm.py "$APP" "$OUTDIR/$APP.blocks_per_sm.ptx"
