#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Run every example tool on both apps and the link example (GPU machine).
#     BPF2PTX=path/to/bpf2ptx bash examples/run_all.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export BPF2PTX="${BPF2PTX:-target/release/bpf2ptx}"
export PYTHONUNBUFFERED=1
for t in blocks_per_sm warp_time mem_hist launch_latency; do
	for app in vecadd matmul; do
		echo "===== $t $app"
		bash "examples/$t/run.sh" "$app" 2>&1
	done
done
echo "===== link"
rm -rf /tmp/link-build
make -C examples/link BPF2PTX="$(pwd)/$BPF2PTX" B=/tmp/link-build run 2>&1
echo "===== gpu_sharing"
bash examples/gpu_sharing/run.sh "${TMPDIR:-/tmp}/gpu_sharing" 2>&1
