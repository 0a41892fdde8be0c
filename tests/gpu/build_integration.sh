#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# Issue 17, build integration on a GPU machine with nvcc and cmake: the example CUDA
# application (examples/cmake-app) built with CMake (cli/cmake/Bpf2ptx.cmake) and with Make
# (cli/make/bpf2ptx.mk), each as `app` and as `app_probed` / `app.probed` with
# app_probe.bpf.c in its kernels. For each build system it checks that
#
#   - both programs build (cmake --build / make);
#   - the instrumented program's standard output is byte-identical to the plain one's;
#   - the plain program has no probe (its maps file says "not instrumented");
#   - the instrumented program's maps equal a CPU model of the launches it reported
#     (examples/cmake-app/check.py: launches, blocks, bytes loaded and stored per kernel);
#
# and prints a results table. The build.rs example is built by CI (cargo test).
#
#     BPF2PTX=/path/to/bpf2ptx bash tests/gpu/build_integration.sh [WORK_DIR]
#
# BPF2PTX defaults to target/release/bpf2ptx. Without clang on the machine the probe is the
# committed examples/cmake-app/app_probe.bpf.o (verified, not rebuilt); with clang, its
# source. ARCH (default 90) is the CUDA architecture. Exit 0 when every check passed.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${1:-/tmp/bpf2ptx-build-integration}"
BPF2PTX="${BPF2PTX:-$repo/target/release/bpf2ptx}"
ARCH="${ARCH:-90}"
app="$repo/examples/cmake-app"
rm -rf "$work" && mkdir -p "$work"
[ -x "$BPF2PTX" ] || { echo "no bpf2ptx at $BPF2PTX (cargo build --release -p bpf2ptx, or BPF2PTX=...)" >&2; exit 2; }
BPF2PTX="$(cd "$(dirname "$BPF2PTX")" && pwd)/$(basename "$BPF2PTX")"

echo "== tools"
nvcc --version | tail -n 1
cmake --version | head -n 1
make --version | head -n 1
"$BPF2PTX" --version
if command -v clang >/dev/null || [ -n "${BPF2PTX_CLANG:-}" ]; then
	probe=app_probe.bpf.c
	echo "clang: $(command -v clang || echo "$BPF2PTX_CLANG"): the probe is built from app_probe.bpf.c"
else
	probe=app_probe.bpf.o
	echo "no clang: the probe is the committed app_probe.bpf.o"
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true

rows=()
fails=0
row() {
	rows+=("| $1 | $2 | $3 |")
	case "$3" in ok*) ;; *) fails=$((fails + 1)) ;; esac
}

# check NAME PLAIN PROBED: run both, compare, model the maps.
check() {
	local name="$1" plain="$2" probed="$3" d="$work/$1"
	if [ ! -x "$plain" ] || [ ! -x "$probed" ]; then
		row "$name" "programs built" "FAILED (missing $plain or $probed)"
		return
	fi
	row "$name" "programs built" "ok"
	PROBE_MAPS="$d/plain.maps" "$plain" >"$d/plain.out" 2>"$d/plain.err"
	local rp=$?
	PROBE_MAPS="$d/probed.maps" "$probed" >"$d/probed.out" 2>"$d/probed.err"
	local rq=$?
	if [ $rp = 0 ] && [ $rq = 0 ]; then
		row "$name" "both exit 0, results correct" "ok"
	else
		row "$name" "both exit 0, results correct" "FAILED (plain $rp, probed $rq; see $d/*.err)"
	fi
	if cmp -s "$d/plain.out" "$d/probed.out"; then
		row "$name" "stdout identical ($(wc -l <"$d/plain.out") lines)" "ok"
	else
		row "$name" "stdout identical" "DIFFERS ($(diff "$d/plain.out" "$d/probed.out" | head -n 3 | tr '\n' ' '))"
	fi
	if grep -q "not instrumented" "$d/plain.maps" && ! grep -q counts "$d/plain.maps"; then
		row "$name" "plain build has no probe" "ok"
	else
		row "$name" "plain build has no probe" "FAILED ($(tr '\n' ' ' <"$d/plain.maps"))"
	fi
	echo "== $name: maps vs CPU model"
	cat "$d/probed.maps"
	if python3 "$app/check.py" "$d/probed.out" "$d/probed.maps" | tee "$d/model.md"; then
		row "$name" "maps = CPU model ($(grep -c '| ok |' "$d/model.md") values)" "ok"
	else
		row "$name" "maps = CPU model" "DIFFERS (see the table above)"
	fi
}

echo "== CMake"
mkdir -p "$work/cmake"
if cmake -S "$app" -B "$work/cmake/build" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
	-DBPF2PTX_EXECUTABLE="$BPF2PTX" -DAPP_PROBE="$app/$probe" >"$work/cmake/configure.log" 2>&1 &&
	cmake --build "$work/cmake/build" -j 8 >"$work/cmake/build.log" 2>&1; then
	row cmake "configure + build" "ok"
else
	row cmake "configure + build" "FAILED"
	tail -n 40 "$work/cmake/configure.log" "$work/cmake/build.log"
fi
check cmake "$work/cmake/build/app" "$work/cmake/build/app_probed"

echo "== Make"
mkdir -p "$work/make"
if make -C "$app" B="$work/make/build" ARCH="sm_$ARCH" BPF2PTX="$BPF2PTX" APP_PROBE="$probe" \
	>"$work/make/build.log" 2>&1; then
	row make "build" "ok"
else
	row make "build" "FAILED"
	tail -n 40 "$work/make/build.log"
fi
check make "$work/make/build/app" "$work/make/build/app.probed"

echo
echo "== results ($(date -u +%F), ARCH=sm_$ARCH)"
echo "| build | check | result |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
if [ $fails = 0 ]; then
	echo "all checks passed"
else
	echo "$fails check(s) failed; logs under $work"
fi
[ $fails = 0 ]
