#!/usr/bin/env bash
# Rebuild every object of the BPF test corpus from tests/corpus/src into
# tests/corpus/obj. The objects are committed, so tests never need clang;
# run this only after changing a source or the helper header:
#
#     bash tests/corpus/build.sh
#
# v1..v3 objects: clang 14 (`clang`, override with CLANG14=...).
# v4 objects:     clang 19 (`clang-19`, override with CLANG19=...).
# Debug paths are rewritten relative to the repository root
# (-fdebug-prefix-map), so the output does not depend on where the
# repository is checked out.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
src="$here/src"
obj="$here/obj"

CLANG14="${CLANG14:-clang}"
CLANG19="${CLANG19:-clang-19}"
OBJCOPY19="${OBJCOPY19:-llvm-objcopy-19}"
OBJDUMP19="${OBJDUMP19:-llvm-objdump-19}"

die() { echo "build.sh: error: $*" >&2; exit 1; }

need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found ($2)"; }
need "$CLANG14" "clang 14 builds the v1..v3 objects: apt-get install clang-14"
need "$CLANG19" "clang 19 builds the v4 objects: apt-get install clang-19"
need "$OBJCOPY19" "strips .BTF.ext from dwarf_only: apt-get install llvm-19"
"$CLANG14" --version | head -n1 | grep -q 'version 14\.' \
	|| die "$CLANG14 is not clang 14: $("$CLANG14" --version | head -n1)"
"$CLANG19" --version | head -n1 | grep -q 'version 19\.' \
	|| die "$CLANG19 is not clang 19: $("$CLANG19" --version | head -n1)"
[ -f /usr/include/bpf/bpf_helpers.h ] || die "libbpf headers missing: apt-get install libbpf-dev"

# name  cpu  extra-cflags (use - for none)
objects=(
	"counter      v1 -"
	"subprog      v1 -"
	"perf_event   v1 -"
	"legacy_maps  v1 -"
	"block_timing v2 -"
	"hist_log2    v2 -"
	"ringbuf      v2 -"
	"dwarf_only   v2 -"
	"warp_timing  v3 -"
	"subprog      v3 -"
	"gpu_maps     v3 -"
	"launch_stamp v3 -"
	"mixed        v2 -"
	"stress_array v3 -"
	"stress_hash  v3 -"
	"rt_maps      v3 -"
	"rt_helpers   v3 -"
	"rt_rings     v3 -"
	"ring_live    v3 -"
	"big          v3 -"
	"big_globals  v3 -"
	"hist_log2    v4 -"
	"globals      v4 -"
	"signed_ops   v4 -"
	"big          v4 -DBIG_GROUPS=40"
)

mkdir -p "$obj"
rm -f "$obj"/*.o
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Compile from the repository root with a relative source path: clang reads each
# source line for BTF line info through the remapped path (./tests/corpus/src/...),
# which only resolves from here.
cd "$repo"
for line in "${objects[@]}"; do
	read -r name cpu extra <<<"$line"
	[ "$extra" = "-" ] && extra=""
	if [ "$cpu" = v4 ]; then cc="$CLANG19"; else cc="$CLANG14"; fi
	out="$obj/$name.$cpu.o"
	# shellcheck disable=SC2086
	"$cc" -target bpf -O2 -g -mcpu="$cpu" \
		-I/usr/include/x86_64-linux-gnu -I"$repo/runtime-ptx/include" \
		-fdebug-prefix-map="$repo"=. $extra \
		-c "tests/corpus/src/$name.bpf.c" -o "$tmp/$name.$cpu.o" \
		|| die "$cc failed on $name.bpf.c (-mcpu=$cpu)"
	if [ "$name" = dwarf_only ]; then
		# Drop func/line info; DWARF (.debug_line) stays.
		"$OBJCOPY19" --remove-section .BTF.ext --remove-section .rel.BTF.ext \
			"$tmp/$name.$cpu.o" "$out" || die "$OBJCOPY19 failed on $out"
	else
		mv "$tmp/$name.$cpu.o" "$out"
	fi
	if command -v "$OBJDUMP19" >/dev/null 2>&1; then
		n="$("$OBJDUMP19" -d "$out" | grep -cE '^ +[0-9]+:')"
		printf 'wrote %-40s %-8s %6s insns\n' "${out#"$repo"/}" "$(basename "$cc")" "$n"
	else
		printf 'wrote %-40s %s\n' "${out#"$repo"/}" "$(basename "$cc")"
	fi
done
echo "build.sh: ${#objects[@]} objects in ${obj#"$repo"/}"
