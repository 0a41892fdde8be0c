#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Measure the bpftime-style probes against a bpf2ptx binary: for every
# tests/probes/bpftime/*.bpf.o, `bpf2ptx verify`, `bpf2ptx X -o x.ptx` (compile) and
# `bpf2ptx inject X --into vectorAdd.ptx`, printed as one markdown row per probe with the
# three exit codes and the first error line. vectorAdd.ptx is nvcc's PTX of
# tests/inject/src/vecadd.cu (tests/inject/fatbin/vecadd.compute_90.ptx) with the kernel
# renamed to bpftime's _Z9vectorAddPKfS0_Pf, so the probes' sections match it.
#
#     BPF2PTX=target/release/bpf2ptx bash tests/probes/bpftime/baseline.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
BPF2PTX="${BPF2PTX:-$repo/target/release/bpf2ptx}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
sed -E 's/\bvecadd(_param_[0-9])?\b/_Z9vectorAddPKfS0_Pf\1/g' \
	"$repo/tests/inject/fatbin/vecadd.compute_90.ptx" >"$tmp/vectorAdd.ptx"
# The first `error` line (for a verifier error, with the explanation on the line after
# it), without the program name and source line, `|` escaped for markdown.
first_error() {
	awk '/^error/ { e = $0; sub(/ in [A-Za-z_0-9]+ \(.*$/, "", e)
		if ($0 ~ /^error\[/) { getline n; sub(/^ +/, "", n); e = e ": " n }
		print e; exit }' "$1" | sed -e 's/|/\\|/g' | cut -c1-220
}
cd "$repo"
echo "| probe | verify | compile | inject | first error |"
echo "|---|---|---|---|---|"
# gemm_budget's loop has no bound but the one --loop-budget gives it (issue 15, point 3).
opts_of() {
	case "$1" in
	gemm_budget) echo "--loop-budget 4096" ;;
	esac
}
for obj in tests/probes/bpftime/*.bpf.o; do
	name="$(basename "$obj" .bpf.o)"
	# shellcheck disable=SC2046
	set -- $(opts_of "$name")
	"$BPF2PTX" verify "$@" "$obj" >"$tmp/v" 2>&1; v=$?
	"$BPF2PTX" "$@" "$obj" -o "$tmp/x.ptx" >"$tmp/c" 2>&1; c=$?
	"$BPF2PTX" inject "$@" "$obj" --into "$tmp/vectorAdd.ptx" -o "$tmp/i.ptx" >"$tmp/i" 2>&1; i=$?
	err="$(first_error "$tmp/v")"
	[ -n "$err" ] || err="$(first_error "$tmp/c")"
	[ -n "$err" ] || err="$(first_error "$tmp/i")"
	echo "| $name | $v | $c | $i | ${err:-} |"
done
