#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Rebuild the bpftime-style probes (tests/probes/bpftime/*.bpf.c -> *.bpf.o) as
# examples/probes/build.sh builds the example probes: clang 14, -target bpf -O2 -g
# -mcpu=v3, debug paths relative to the repository root. The objects are committed.
# The probes include only this folder's headers (bpftime_gpu.h: bpftime's ids) and
# libbpf's, not runtime-ptx/include: they are written against bpftime's conventions.
#
#     bash tests/probes/bpftime/build.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
CLANG="${CLANG:-clang-14}"
command -v "$CLANG" >/dev/null || CLANG=clang
command -v "$CLANG" >/dev/null || { echo "build.sh: clang not found (apt-get install clang-14 libbpf-dev)" >&2; exit 1; }
cd "$repo"
for src in tests/probes/bpftime/*.bpf.c; do
	out="${src%.c}.o"
	"$CLANG" -target bpf -O2 -g -mcpu=v3 -D__TARGET_ARCH_x86 \
		-I/usr/include/x86_64-linux-gnu -I"$here" \
		-fdebug-prefix-map="$repo"=. -c "$src" -o "$out"
	echo "wrote $out"
done
