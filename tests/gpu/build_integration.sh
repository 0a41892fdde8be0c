#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# Issue 17, build integration on a GPU machine with nvcc and cmake: the example CUDA
# application (examples/cmake-app) built with CMake (cli/cmake/Bpf2ptx.cmake) and with Make
# (cli/make/bpf2ptx.mk), each as `app` and as `app_probed` / `app.probed` with
# app_probe.bpf.c in its kernels. For each build system it checks that
#
#   - both programs build (cmake --build / make);
#   - the instrumented program's fatbin holds the instrumented code in SASS and PTX alike
#     (cuobjdump: every image with a kernel has the probe's map symbols, as many SASS
#     images as the plain program's), so the driver cannot run old SASS; the plain one
#     holds none;
#   - the instrumented program's standard output is byte-identical to the plain one's;
#   - the plain program has no probe (its maps file says "not instrumented");
#   - the instrumented program's maps equal a CPU model of the launches it reported
#     (examples/cmake-app/check.py: launches, blocks, bytes loaded and stored per kernel);
#
# and prints a results table. Four builds: CMake for ARCH, CMake for "75;ARCH" (several
# virtual architectures: each one's PTX instrumented on its own, the GPU running the
# ARCH SASS), Make for sm_ARCH, and Make for sm_ARCHa where ARCH has an arch-specific
# variant (nvcc 13 keeps compute_ARCH PTX beside compute_ARCHa). The build.rs example is
# built by CI (cargo test).
#
#     BPF2PTX=/path/to/bpf2ptx bash tests/gpu/build_integration.sh [WORK_DIR]
#
# BPF2PTX defaults to target/release/bpf2ptx. Without clang on the machine the probe is the
# committed examples/cmake-app/app_probe.bpf.o (verified, not rebuilt); with clang, its
# source. ARCH (default 90) is the CUDA architecture. BUILD_ONLY=1 stops after the build
# checks (a machine without a GPU, with nvcc: no program runs). Exit 0 when every check
# passed.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${1:-/tmp/bpf2ptx-build-integration}"
BPF2PTX="${BPF2PTX:-$repo/target/release/bpf2ptx}"
ARCH="${ARCH:-90}"
BUILD_ONLY="${BUILD_ONLY:-0}"
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
[ "$BUILD_ONLY" = 1 ] || nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true

rows=()
fails=0
row() {
	rows+=("| $1 | $2 | $3 |")
	case "$3" in ok*) ;; *) fails=$((fails + 1)) ;; esac
}

# images BINARY DIR: cuobjdump's SASS and PTX images of BINARY into DIR; prints
# "SASS PTX PROBED" counted over the images that hold a kernel (a cubin with a .text.
# section, PTX with an .entry), PROBED those with a probe map's symbol.
images() {
	local bin="$1" dir="$2" sass=0 ptx=0 probed=0 f
	rm -rf "$dir" && mkdir -p "$dir"
	(cd "$dir" && cuobjdump -xelf all -xptx all "$bin" >/dev/null 2>&1) || true
	for f in "$dir"/*; do
		case "$f" in
		*.cubin) grep -aq '\.text\.' "$f" || continue; sass=$((sass + 1)) ;;
		*.ptx) grep -aq '\.entry' "$f" || continue; ptx=$((ptx + 1)) ;;
		*) continue ;;
		esac
		! grep -aq 'bpf2ptx_map_' "$f" || probed=$((probed + 1))
	done
	echo "$sass $ptx $probed"
}

# check NAME PLAIN PROBED: the fatbins, then run both, compare, model the maps.
check() {
	local name="$1" plain="$2" probed="$3" d="$work/$1"
	if [ ! -x "$plain" ] || [ ! -x "$probed" ]; then
		row "$name" "programs built" "FAILED (missing $plain or $probed)"
		return
	fi
	row "$name" "programs built" "ok"
	if command -v cuobjdump >/dev/null; then
		local p q
		read -r -a p <<<"$(images "$plain" "$d/images/plain")"
		read -r -a q <<<"$(images "$probed" "$d/images/probed")"
		local what="${q[0]} SASS + ${q[1]} PTX images with kernels"
		if [ "${q[0]}" = "${p[0]}" ] && [ "${q[1]}" = "${p[1]}" ] && [ "${q[2]}" = $((q[0] + q[1])) ] &&
			[ $((q[0] + q[1])) -gt 0 ] && [ "${p[2]}" = 0 ]; then
			row "$name" "fatbin: $what, all instrumented; plain none" "ok"
		else
			row "$name" "fatbin: images instrumented" "FAILED (probed: $what, ${q[2]} with the probe; plain: ${p[0]} SASS + ${p[1]} PTX, ${p[2]} with the probe; see $d/images)"
		fi
	else
		row "$name" "fatbin: images instrumented" "ok (not checked: no cuobjdump)"
	fi
	[ "$BUILD_ONLY" != 1 ] || return 0
	PROBE_MAPS="$d/plain.maps" "$plain" >"$d/plain.out" 2>"$d/plain.err"
	local rp=$?
	PROBE_MAPS="$d/probed.maps" "$probed" >"$d/probed.out" 2>"$d/probed.err"
	local rq=$?
	if [ $rp = 0 ] && [ $rq = 0 ]; then
		row "$name" "both exit 0, results correct" "ok"
	else
		row "$name" "both exit 0, results correct" "FAILED (plain $rp, probed $rq; see $d/*.err)"
	fi
	if [ -s "$d/plain.out" ] && cmp -s "$d/plain.out" "$d/probed.out"; then
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

# cmake NAME ARCHITECTURES
cmake_build() {
	local name="$1" archs="$2"
	echo "== $name (CMake, CUDA_ARCHITECTURES $archs)"
	mkdir -p "$work/$name"
	if cmake -S "$app" -B "$work/$name/build" -DCMAKE_CUDA_ARCHITECTURES="$archs" \
		-DBPF2PTX_EXECUTABLE="$BPF2PTX" -DAPP_PROBE="$app/$probe" >"$work/$name/configure.log" 2>&1 &&
		cmake --build "$work/$name/build" -j 8 >"$work/$name/build.log" 2>&1; then
		row "$name" "configure + build ($archs)" "ok"
	else
		row "$name" "configure + build ($archs)" "FAILED"
		tail -n 40 "$work/$name/configure.log" "$work/$name/build.log"
	fi
	check "$name" "$work/$name/build/app" "$work/$name/build/app_probed"
}

# make NAME ARCH
make_build() {
	local name="$1" arch="$2"
	echo "== $name (Make, ARCH=$arch)"
	mkdir -p "$work/$name"
	if make -C "$app" B="$work/$name/build" ARCH="$arch" BPF2PTX="$BPF2PTX" APP_PROBE="$probe" \
		>"$work/$name/build.log" 2>&1; then
		row "$name" "build ($arch)" "ok"
	else
		row "$name" "build ($arch)" "FAILED"
		tail -n 40 "$work/$name/build.log"
	fi
	check "$name" "$work/$name/build/app" "$work/$name/build/app.probed"
}

cmake_build cmake "$ARCH"
cmake_build cmake-multi "75;$ARCH"
make_build make "sm_$ARCH"
# Arch-specific variants (sm_90a, sm_100a, sm_120a, ...) exist from sm_90 on.
if [ "${ARCH%%[a-z]*}" -ge 90 ] 2>/dev/null && [ "$ARCH" = "${ARCH%%[a-z]*}" ]; then
	make_build make-a "sm_${ARCH}a"
fi

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
