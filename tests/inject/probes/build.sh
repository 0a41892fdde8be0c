#!/usr/bin/env bash
# Rebuilds the injection test probes (committed .o files; tests never need clang).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
CLANG="${CLANG:-clang}"
for s in "$here"/*.bpf.c; do
    "$CLANG" -O2 -g -target bpf -mcpu=v3 -I/usr/include/x86_64-linux-gnu -I "$repo/runtime-ptx/include" \
        -fdebug-prefix-map="$repo"=. -c "$s" -o "${s%.c}.o"
done
