#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Issue 19's benchmark, self-contained, on a machine with an NVIDIA GPU, nvcc and
# python3 + CuPy:
#
#     BPF2PTX=path/to/bpf2ptx bash benches/gpu/fuse.sh OUT.md [BUILD_DIR]
#
# 1. nvcc builds the example apps' PTX (examples/apps/{vecadd,matmul}.cu) and the
#    hand-written twins (benches/gpu/twins.cu) for this GPU's architecture;
# 2. BPF2PTX weaves every benchmark probe (examples/probes/*, and fuse_forward from
#    tests/inject/probes) into each app twice: today's lowering (`inject --no-fuse`)
#    and the fused one (the default), and ptxas reports each kernel's registers;
# 3. fuse.py checks (outputs, maps against the CPU model and fused against today's) and
#    times everything side by side, and writes the markdown report to OUT.md.
# Exit status: 0 when every check passed (targets are reported, not enforced).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT="${1:?usage: BPF2PTX=path/to/bpf2ptx bash benches/gpu/fuse.sh OUT.md [BUILD_DIR]}"
B="${2:-${TMPDIR:-/tmp}/bpf2ptx-fuse}"
BPF2PTX="${BPF2PTX:?set BPF2PTX to the bpf2ptx binary (cargo build --release: target/release/bpf2ptx)}"
mkdir -p "$B"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
ARCH="sm_${cc:-90}"
echo "GPU architecture $ARCH; build folder $B"

for app in vecadd matmul; do
	nvcc -ptx -arch="$ARCH" "examples/apps/$app.cu" -o "$B/$app.ptx"
done
nvcc -cubin -arch="$ARCH" -O3 benches/gpu/twins.cu -o "$B/twins.cubin"

probe_path() {
	case "$1" in
	fuse_forward) echo tests/inject/probes/fuse_forward.bpf.o ;;
	*) echo "examples/probes/$1.bpf.o" ;;
	esac
}
for app in vecadd matmul; do
	for p in empty warp_counter thread_counter plain_counter warp_time mem_hist fuse_forward; do
		"$BPF2PTX" inject "$(probe_path "$p")" --into "$B/$app.ptx" --no-fuse -o "$B/$app.$p.today.ptx"
		"$BPF2PTX" inject "$(probe_path "$p")" --into "$B/$app.ptx" -o "$B/$app.$p.fused.ptx"
	done
done

# Registers and stack of each kernel (fusion keeps accumulators in registers).
{
	echo "| module | registers | stack |"
	echo "|---|---:|---:|"
	for f in "$B"/*.ptx; do
		v=$(ptxas -arch="$ARCH" -v "$f" -o "$B/ptxas.cubin" 2>&1) || { echo "| $(basename "$f") | ptxas failed | |"; continue; }
		regs=$(echo "$v" | grep -o 'Used [0-9]* registers' | head -1 | grep -o '[0-9]*' || true)
		stack=$(echo "$v" | grep -o '[0-9]* bytes stack frame' | head -1 | grep -o '^[0-9]*' || true)
		echo "| $(basename "$f") | $regs | $stack |"
	done
} >"$B/registers.md"
cat "$B/registers.md"

python3 benches/gpu/fuse.py --build "$B" --out "$OUT" --reps "${REPS:-30}" --warmup "${WARMUP:-5}"
{
	echo
	echo "## Registers (ptxas -v, $ARCH)"
	echo
	cat "$B/registers.md"
} >>"$OUT"
echo "wrote $OUT"
