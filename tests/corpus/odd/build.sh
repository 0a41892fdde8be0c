#!/usr/bin/env bash
# Rebuild the objects of the odd-object corpus (tests/corpus/odd/src → obj): objects
# the way older toolchains, iproute2 and libbpf's extern conventions leave them. The
# objects are committed, so tests never need clang; run this only after changing a
# source:
#
#     bash tests/corpus/odd/build.sh
#
# *.bpf.c: clang 14 (`clang`, override with CLANG=...; Debian's `apt-get install clang`),
#          -target bpf -O2 -g -mcpu=v3, with the minimal declarations of src/odd.h (no
#          libbpf headers).
# *.s:     llvm-mc (`llvm-mc`, override with LLVM_MC=...) -triple bpfel: hand-written
#          sections without function symbols.
# Debug paths are rewritten relative to the repository root (-fdebug-prefix-map), so
# the output does not depend on where the repository is checked out.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
obj="$here/obj"
CLANG="${CLANG:-clang}"
LLVM_MC="${LLVM_MC:-llvm-mc}"

die() { echo "build.sh: error: $*" >&2; exit 1; }
command -v "$CLANG" >/dev/null 2>&1 || die "'$CLANG' not found: apt-get install clang"
command -v "$LLVM_MC" >/dev/null 2>&1 || die "'$LLVM_MC' not found: apt-get install llvm"
"$CLANG" --version | head -n1 | grep -q 'version 14\.' \
	|| die "$CLANG is not clang 14: $("$CLANG" --version | head -n1)"

mkdir -p "$obj"
rm -f "$obj"/*.o
cd "$repo"
n=0
for src in tests/corpus/odd/src/*.bpf.c; do
	name="$(basename "$src" .bpf.c)"
	"$CLANG" -target bpf -O2 -g -mcpu=v3 -fdebug-prefix-map="$repo"=. \
		-c "$src" -o "$obj/$name.o" || die "$CLANG failed on $src"
	echo "wrote tests/corpus/odd/obj/$name.o"
	n=$((n + 1))
done
for src in tests/corpus/odd/src/*.s; do
	name="$(basename "$src" .s)"
	"$LLVM_MC" -triple bpfel -filetype=obj "$src" -o "$obj/$name.o" \
		|| die "$LLVM_MC failed on $src"
	echo "wrote tests/corpus/odd/obj/$name.o"
	n=$((n + 1))
done
echo "build.sh: $n objects in tests/corpus/odd/obj"
