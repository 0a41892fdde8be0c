#!/usr/bin/env bash
# Regenerate tests/corpus/kernel/kernel-maps.tsv: the Linux kernel's view
# (through libbpf) of every map in tests/corpus/obj/*.o. It is an oracle for
# bpf2ptx's loader: key/value sizes, max_entries and flags of BTF-defined
# maps and of libbpf's global-data maps, as the kernel reports them.
#
#     bash tests/corpus/kernel/run.sh
#
# Needs gcc, libbpf-dev, root and a kernel that allows bpf(2); when not
# root or bpf(2) is refused it prints why and exits 0 without touching the
# TSV. With bpftool installed every created map is also checked against
# `bpftool map show id N` while it is alive (a mismatch fails the run).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
objdir="$(cd "$here/../obj" && pwd)"
# Optional first argument: where to write the table (CI writes a fresh one elsewhere).
out="${1:-$here/kernel-maps.tsv}"
bin="${TMPDIR:-/tmp}/bpf2ptx-maps"

die() { echo "run.sh: error: $*" >&2; exit 1; }

command -v gcc >/dev/null || die "gcc not found (apt-get install gcc)"
[ -f /usr/include/bpf/libbpf.h ] || die "libbpf headers not found (apt-get install libbpf-dev)"
gcc -O2 -Wall -Wextra "$here/maps.c" -lbpf -o "$bin" || die "building maps.c failed"

if [ "$(id -u)" != 0 ]; then
	echo "run.sh: skipped: not root (bpf(2) map creation needs CAP_BPF/root); $out left as is"
	exit 0
fi
if ! reason="$("$bin" --probe)"; then
	echo "run.sh: skipped: $reason; $out left as is"
	exit 0
fi

check=--bpftool
checked=yes
if ! command -v bpftool >/dev/null; then
	echo "run.sh: bpftool not found: maps are not cross-checked with bpftool" >&2
	check=""
	checked=no
fi

shopt -s nullglob
objs=("$objdir"/*.o)
[ ${#objs[@]} -gt 0 ] || die "no objects in $objdir (run tests/corpus/build.sh)"

rows="$(mktemp)"
log="$(mktemp)"
trap 'rm -f "$rows" "$log" "$out.tmp"' EXIT
for o in "${objs[@]}"; do
	"$bin" $check "$o" >>"$rows" 2>>"$log" || {
		cat "$log" >&2
		die "maps failed on $o"
	}
done
[ -z "$check" ] || { grep -c ': ok ' "$log" || true; } | sed 's/^/run.sh: bpftool agrees on /; s/$/ maps/'

libbpf_ver="$("$bin" --version)"
pkg_ver="$(pkg-config --modversion libbpf 2>/dev/null || echo unknown)"
{
	echo "# kernel view of the maps in tests/corpus/obj/*.o (oracle for the bpf2ptx loader)"
	echo "# command: bash tests/corpus/kernel/run.sh  (gcc maps.c -lbpf; maps ${check:+--bpftool }OBJ for every object)"
	echo "# kernel: $(uname -sr); libbpf: $libbpf_ver (package $pkg_ver); bpftool cross-check: $checked"
	echo "# programs are not loaded (autoload off); maps of bpftime GPU types (1501..) are not created (autocreate off)"
	echo "# map = bpf_map__name(); numbers and kernel_name = bpf_map_info from the kernel. libbpf names global-data"
	echo "#   maps <object name truncated to 8 chars>.<section> (object name = file name up to the first '.', so"
	echo "#   hist_log2.v2.o -> hist_log.rodata), but a section name with a second '.' gets no prefix (.rodata.str1.1);"
	echo "#   global-data maps get map_flags BPF_F_MMAPABLE (0x400), plus BPF_F_RDONLY_PROG (0x80) for .rodata*;"
	echo "#   .rodata.str1.1 has no BTF DATASEC and is not mmapable (0x80 only)"
	printf '# object\tmap\ttype\tkey_size\tvalue_size\tmax_entries\tmap_flags\tkernel_name\n'
	grep '^#' "$rows" | LC_ALL=C sort || true
	grep -v '^#' "$rows" | LC_ALL=C sort || true
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "run.sh: wrote ${out} ($(grep -vc '^#' "$out") maps, $(grep -c '^# skip' "$out") skips)"
