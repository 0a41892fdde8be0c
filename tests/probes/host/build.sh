#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Rebuild the host-side program probes the checks of cli/src/host.rs load (refused
# ones: a hash map, a GPU helper; accepted: a uprobe on cuLaunchKernel), as
# examples/probes/build.sh builds the examples. The objects are committed.
#     bash tests/probes/host/build.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
CLANG="${CLANG:-clang-14}"
command -v "$CLANG" >/dev/null || { echo "build.sh: $CLANG not found (apt-get install clang-14 libbpf-dev)" >&2; exit 1; }
cd "$repo"
for src in tests/probes/host/*.bpf.c; do
	out="${src%.c}.o"
	"$CLANG" -target bpf -O2 -g -mcpu=v3 \
		-I/usr/include/x86_64-linux-gnu -I"$repo/runtime-ptx/include" \
		-fdebug-prefix-map="$repo"=. -c "$src" -o "$out"
	echo "wrote $out"
done
