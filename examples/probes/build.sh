#!/usr/bin/env bash
# Rebuild the example probes (examples/probes/*.bpf.c -> *.bpf.o) the way
# tests/corpus/build.sh builds the corpus: clang 14, -target bpf -O2 -g,
# debug paths relative to the repository root. The objects are committed.
#
#     bash examples/probes/build.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
CLANG="${CLANG:-clang-14}"
command -v "$CLANG" >/dev/null || { echo "build.sh: $CLANG not found (apt-get install clang-14 libbpf-dev)" >&2; exit 1; }
cd "$repo"
for src in examples/probes/*.bpf.c; do
	out="${src%.c}.o"
	"$CLANG" -target bpf -O2 -g -mcpu=v3 \
		-I/usr/include/x86_64-linux-gnu -I"$repo/runtime-ptx/include" \
		-fdebug-prefix-map="$repo"=. -c "$src" -o "$out"
	echo "wrote $out"
done
