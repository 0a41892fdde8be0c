#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Everything issue 6 measures on the GPU, in one command (what was run on the
# H200 for benches/results/inject-overhead.md and the examples' READMEs):
#     BPF2PTX=path/to/bpf2ptx bash benches/gpu/device.sh OUTDIR
# OUTDIR gets bench.log, inject-overhead.md, overhead.json, sass.md,
# sass_vecadd.txt, ncu.log, examples.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
O="${1:?output folder}"
mkdir -p "$O"
export BPF2PTX="${BPF2PTX:-target/release/bpf2ptx}" PYTHONUNBUFFERED=1
B=/tmp/bpf2ptx-bench
REPORT="$O/inject-overhead.md" bash benches/gpu/run.sh "$B" 2>&1 | tee "$O/bench.log"
cp "$B/sass.md" "$B/overhead.json" "$O/" 2>/dev/null
for m in vecadd.thread_counter vecadd.warp_counter vecadd.mem_hist; do
	echo "===== $m"; cuobjdump -sass "$B/$m.cubin" | grep -E '^\s+/\*[0-9a-f]{4}\*/|Function'
done >"$O/sass_vecadd.txt" 2>&1
bash examples/run_all.sh >"$O/examples.log" 2>&1
{
	M=gpu__time_duration.sum,smsp__inst_executed.sum,lts__t_sectors_op_red.sum,lts__t_sectors_op_atom.sum
	ncu --clock-control none --metrics $M -k regex:vecAdd -c 1 python3 benches/gpu/ncu_one.py vecadd "$B/vecadd.thread_counter.ptx" _Z6vecAddPKfS0_Pfi
	ncu --clock-control none --metrics $M -k regex:vecAdd -c 1 python3 benches/gpu/ncu_one.py vecadd "$B/vecadd.warp_counter.ptx" _Z6vecAddPKfS0_Pfi
	for t in vecadd_native vecadd_thread_sharded vecadd_thread_padded vecadd_warp_sharded vecadd_warp_padded; do
		ncu --clock-control none --metrics $M -k regex:$t -c 1 python3 benches/gpu/ncu_one.py vecadd "$B/twins.cubin" $t twin
	done
} >"$O/ncu.log" 2>&1
tail -5 "$O/ncu.log"
