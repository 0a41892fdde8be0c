#!/usr/bin/env bash
# Rebuild the clang objects the verifier tests use (tests/verifier/clang/*.bpf.c ->
# *.v3.o): safe programs as clang -O2 emits them, with standard Linux helpers only, so
# tests/tests/verifier_kernel.rs can require bpf2ptx to accept them and compare its
# verdict with the Linux verifier's. The objects are committed; run this only after
# changing a source:
#
#     bash tests/verifier/clang/build.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
CLANG="${CLANG:-clang}"
command -v "$CLANG" >/dev/null || { echo "build.sh: $CLANG not found (apt-get install clang)" >&2; exit 1; }
[ -f /usr/include/bpf/bpf_helpers.h ] || { echo "build.sh: apt-get install libbpf-dev" >&2; exit 1; }
for src in "$here"/*.bpf.c; do
	name="$(basename "$src" .bpf.c)"
	"$CLANG" -target bpf -O2 -g -mcpu=v3 -I/usr/include/x86_64-linux-gnu \
		-fdebug-prefix-map="$repo"/= -c "$src" -o "$here/$name.v3.o"
	echo "built tests/verifier/clang/$name.v3.o"
done
