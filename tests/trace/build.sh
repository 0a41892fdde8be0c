#!/usr/bin/env bash
# Rebuild tests/trace/probes.bpf.o, the map definitions of the trace snapshot fixtures, and
# tests/trace/shared_maps.bpf.o, the interposer tests' maps of every kind (committed, so
# tests never need clang). clang 14, as tests/corpus/build.sh's v3 objects.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
"${CLANG14:-clang}" -target bpf -O2 -g -mcpu=v3 \
	-I/usr/include/x86_64-linux-gnu -I"$repo/runtime-ptx/include" \
	-fdebug-prefix-map="$repo"=. \
	-c tests/trace/probes.bpf.c -o tests/trace/probes.bpf.o
echo "wrote tests/trace/probes.bpf.o"
"${CLANG14:-clang}" -target bpf -O2 -g -mcpu=v3 \
	-I/usr/include/x86_64-linux-gnu -I"$repo/runtime-ptx/include" \
	-fdebug-prefix-map="$repo"=. \
	-c tests/trace/shared_maps.bpf.c -o tests/trace/shared_maps.bpf.o
echo "wrote tests/trace/shared_maps.bpf.o"
"${CLANG14:-clang}" -target bpf -O2 -g -mcpu=v3 \
	-I/usr/include/x86_64-linux-gnu -I"$repo/runtime-ptx/include" \
	-fdebug-prefix-map="$repo"=. \
	-c tests/trace/printk.bpf.c -o tests/trace/printk.bpf.o
echo "wrote tests/trace/printk.bpf.o"
