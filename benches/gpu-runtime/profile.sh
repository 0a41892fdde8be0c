#!/usr/bin/env bash
# On the GPU machine, after run.sh built the cubins into /tmp/rt: instructions executed and
# global reductions issued per kernel, ours against the twin, one small launch each (ncu).
#
#     bash benches/gpu-runtime/profile.sh        (CSV in $OUT/ncu.csv, else /tmp/rt-out)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-/tmp/rt-out}"
mkdir -p "$out"
only="empty,array_n/device,array_1/device,warp_array/device,thread_array/device,hash_update/device,ring/device"
m=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__sass_inst_executed_op_global_red.sum
ncu --csv --page raw --metrics "$m" --kernel-name regex:'bpf2ptx_entry|twin_' \
	python3 "$here/bench.py" --cubins /tmp/rt --profile --only "$only" >"$out/ncu.csv" 2>"$out/ncu.err" \
	|| ncu --csv --page raw --metrics smsp__inst_executed.sum --kernel-name regex:'bpf2ptx_entry|twin_' \
		python3 "$here/bench.py" --cubins /tmp/rt --profile --only "$only" >"$out/ncu.csv" 2>>"$out/ncu.err"
tail -n 5 "$out/ncu.err"
wc -l "$out/ncu.csv"
