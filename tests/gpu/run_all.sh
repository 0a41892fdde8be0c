#!/usr/bin/env bash
# Every GPU check in one go (about 7 minutes on an H200: fits one device call), each
# result table into $OUT (default /tmp/gpu-out), then one summary line per check.
# From the repository root on the GPU machine:
#
#     BPF2PTX=gpu-carry/bpf2ptx RND=gpu-carry/rnd OUT=$OUT bash tests/gpu/run_all.sh
#
# RND: a directory of random programs (`.data`, from tests/random.rs), skipped if unset.
# SKIP_HOST_MAPS=1 shortens the matrix by 3 minutes; BENCH=0 skips the benchmark.
set -u
export BPF2PTX=${BPF2PTX:-./target/release/bpf2ptx}
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
. "$(dirname "${BASH_SOURCE[0]}")/steps.sh"
step conformance 120 "$BPF2PTX" run tests/conformance/tests --target sm_90
[ -n "${RND:-}" ] && step random 180 "$BPF2PTX" run "$RND"
step matrix 400 python3 tests/gpu/matrix.py "$out/matrix.md"
step map_ops 200 python3 tests/gpu/map_ops.py "$out/map_ops.md"
step per_unit 120 python3 tests/gpu/per_unit.py "$out/per_unit.md"
step ring_wrap 120 python3 tests/gpu/ring_wrap.py "$out/ring_wrap.md"
step check_maps 120 python3 tests/gpu/check_maps.py
step inject_check 200 python3 tests/gpu/inject_check.py
step sanitize_all 300 bash tests/gpu/sanitize_all.sh
if [ "${BENCH:-1}" != 0 ]; then
	step bench 300 env OUT="$out/bench" bash benches/gpu-runtime/run.sh
fi
finish
