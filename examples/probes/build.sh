#!/usr/bin/env bash
# Rebuild the example probes (examples/probes/*.bpf.c -> *.bpf.o) the way
# tests/corpus/build.sh builds the corpus: clang 14, -target bpf -O2 -g,
# debug paths relative to the repository root. The objects are committed.
#
#     bash examples/probes/build.sh [examples/probes/NAME.bpf.c ...]   (default: all)
#
# `bpf2ptx build examples/probes/NAME.bpf.c` makes the same object (with the
# highest -mcpu your clang has); this script pins clang 14 and -mcpu=v3 so the
# committed objects do not change with the machine that rebuilds them.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
CLANG="${CLANG:-clang-14}"
command -v "$CLANG" >/dev/null || { echo "build.sh: $CLANG not found (apt-get install clang-14 libbpf-dev)" >&2; exit 1; }
cd "$repo"
[ $# -gt 0 ] || set -- examples/probes/*.bpf.c
for src in "$@"; do
	out="${src%.c}.o"
	"$CLANG" -target bpf -O2 -g -mcpu=v3 \
		-I/usr/include/x86_64-linux-gnu -I"$repo/runtime-ptx/include" \
		-fdebug-prefix-map="$repo"=. -c "$src" -o "$out"
	echo "wrote $out"
done
