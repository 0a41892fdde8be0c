#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Rebuild the hash-map benchmark probes (benches/gpu-hash/probes/*.bpf.c -> *.bpf.o) as
# examples/probes/build.sh builds the example probes: clang 14, -target bpf -O2 -g
# -mcpu=v3, debug paths relative to the repository root. The objects are committed.
#
#     bash benches/gpu-hash/probes/build.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
CLANG="${CLANG:-clang-14}"
command -v "$CLANG" >/dev/null || CLANG=clang
command -v "$CLANG" >/dev/null || { echo "build.sh: clang not found (apt-get install clang-14 libbpf-dev)" >&2; exit 1; }
cd "$repo"
for src in benches/gpu-hash/probes/*.bpf.c; do
	out="${src%.c}.o"
	"$CLANG" -target bpf -O2 -g -mcpu=v3 \
		-I/usr/include/x86_64-linux-gnu -I"$repo/runtime-ptx/include" \
		-fdebug-prefix-map="$repo"=. -c "$src" -o "$out"
	echo "wrote $out"
done
