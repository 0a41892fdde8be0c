#!/usr/bin/env bash
# On the GPU machine, from the repository root: assemble the committed probe PTX with
# ptxas, build the CUDA twins with nvcc, dump both as SASS, check + time everything.
#
#     bash benches/gpu-runtime/run.sh [bench.py options]   (results in $OUT, else /tmp/rt-out)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-/tmp/rt-out}"
cubins=/tmp/rt
mkdir -p "$cubins" "$out"
for f in "$here"/ptx/*.ptx; do
	ptxas -arch=sm_90 -O3 "$f" -o "$cubins/$(basename "$f" .ptx).cubin"
done
nvcc -arch=sm_90 -O3 -cubin "$here/twins.cu" -o "$cubins/twins.cubin"
nvcc -arch=sm_90 -O3 -cubin -DSYSTEM_SCOPE "$here/twins.cu" -o "$cubins/twins_sys.cubin"
for c in "$cubins"/*.cubin; do echo "== $(basename "$c")"; cuobjdump -sass "$c"; done >"$out/sass.txt"
{ nvcc --version | tail -n 2; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv; } >"$out/env.txt" 2>&1 || true
cat "$out/env.txt"
export PYTHONUNBUFFERED=1
python3 "$here/bench.py" --cubins "$cubins" --quick "$@"
python3 "$here/bench.py" --cubins "$cubins" --json "$out/results.json" --md "$out/results.md" "$@" 2>&1 | tee "$out/log.txt"
