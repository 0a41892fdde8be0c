#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The whole injection-overhead benchmark in one command, on a machine with an
# NVIDIA GPU, nvcc, ptxas, cuobjdump and python3 + CuPy:
#
#     bash benches/gpu/run.sh [BUILD_DIR]
#
# 1. nvcc builds the hand-written twins (benches/gpu/twins.cu -> twins.cubin);
#    the applications' PTX is examples/apps/*.ptx (committed; REBUILD_APPS=1
#    rebuilds it with this machine's nvcc -ptx -arch=sm_90);
# 2. bpf2ptx inject merges each probe of examples/probes into each app, and again with
#    --rebind-maps (the lowering `bpf2ptx trace` uses: maps found through descriptor and
#    reference words, so one instance serves every module; run unbound here);
# 3. ptxas + cuobjdump summarise the SASS of every injected kernel (sass.md);
# 4. overhead.py checks and times everything and writes the report
#    (benches/results/inject-overhead.md unless REPORT=... says otherwise).
# BPF2PTX=path/to/bpf2ptx (default: target/release/bpf2ptx, else gpu-carry/bpf2ptx).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B="${1:-${TMPDIR:-/tmp}/bpf2ptx-bench}"
mkdir -p "$B"
BPF2PTX="${BPF2PTX:-}"
if [ -z "$BPF2PTX" ]; then
	if [ -x target/release/bpf2ptx ]; then BPF2PTX=target/release/bpf2ptx; else BPF2PTX=gpu-carry/bpf2ptx; fi
fi
REPORT="${REPORT:-benches/results/inject-overhead.md}"
PROBES="empty warp_counter thread_counter plain_counter warp_time mem_hist"

if [ "${REBUILD_APPS:-0}" = 1 ] || [ ! -f examples/apps/vecadd.ptx ]; then
	for app in vecadd matmul; do
		nvcc -ptx -arch=sm_90 "examples/apps/$app.cu" -o "examples/apps/$app.ptx"
	done
fi
nvcc -cubin -arch=sm_90 -O3 benches/gpu/twins.cu -o "$B/twins.cubin"

for app in vecadd matmul; do
	for p in $PROBES; do
		if ! "$BPF2PTX" inject "examples/probes/$p.bpf.o" --into "examples/apps/$app.ptx" \
			-o "$B/$app.$p.ptx" 2>"$B/$app.$p.err"; then
			echo "inject failed: $app $p: $(cat "$B/$app.$p.err")"
			rm -f "$B/$app.$p.ptx"
		fi
		if ! "$BPF2PTX" inject "examples/probes/$p.bpf.o" --into "examples/apps/$app.ptx" \
			--rebind-maps -o "$B/$app.$p.rebind.ptx" 2>"$B/$app.$p.rebind.err"; then
			echo "inject --rebind-maps failed: $app $p: $(cat "$B/$app.$p.rebind.err")"
			rm -f "$B/$app.$p.rebind.ptx"
		fi
	done
done

# With nothing to attach (the empty probe is dropped), inject must leave nvcc's PTX as it was.
for app in vecadd matmul; do
	if [ -f "$B/$app.empty.ptx" ] && cmp -s "examples/apps/$app.ptx" "$B/$app.empty.ptx"; then
		echo "$app: empty probe -> output byte-identical to the input"
	else
		echo "$app: empty probe -> output differs from the input"
	fi
done

# SASS summary: registers, stack, instruction counts of each kernel.
{
	echo "| module | regs | stack | SASS insns | CALL | RED/ATOM | LDL/STL | S2R SMID |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|"
	for f in examples/apps/vecadd.ptx examples/apps/matmul.ptx "$B"/*.ptx; do
		[ -f "$f" ] || continue
		c="$B/$(basename "$f" .ptx).cubin"
		if ! v=$(ptxas -arch=sm_90 -v "$f" -o "$c" 2>&1); then
			echo "| $(basename "$f") | ptxas failed: $(echo "$v" | head -c 300 | tr '\n|' '  ') |||||||"
			continue
		fi
		regs=$(echo "$v" | grep -o 'Used [0-9]* registers' | head -1 | grep -o '[0-9]*' || true)
		stack=$(echo "$v" | grep -o '[0-9]* bytes stack frame' | head -1 | grep -o '^[0-9]*' || true)
		s=$(cuobjdump -sass "$c")
		n=$(echo "$s" | grep -cE '^\s+/\*[0-9a-f]{4}\*/' || true)
		call=$(echo "$s" | grep -cE 'CALL' || true)
		red=$(echo "$s" | grep -cE "(RED|REDG|ATOM|ATOMG|ATOMS)\\." || true)
		ldl=$(echo "$s" | grep -cE '\b(LDL|STL)\b' || true)
		smid=$(echo "$s" | grep -cE "SR_VIRTID|SR_SMID|SR_VIRTUALSMID" || true)
		echo "| $(basename "$f") | $regs | $stack | $n | $call | $red | $ldl | $smid |"
	done
} >"$B/sass.md"
cat "$B/sass.md"

python3 benches/gpu/overhead.py --build "$B" --out "$REPORT" --json "$B/overhead.json" "${@:2}"
