#!/usr/bin/env bash
# Rebuild the runtime-operation probes (src/*.bpf.c -> obj/*.o, clang 14, -mcpu=v3) and
# lower them to PTX (ptx/*.ptx) with the bpf2ptx binary ($BPF2PTX, default
# target/release/bpf2ptx). The objects and the PTX are committed, so the GPU machine needs
# neither clang nor bpf2ptx:
#
#     cargo build --release -p bpf2ptx && bash benches/gpu-runtime/build.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
CLANG14="${CLANG14:-clang}"
BPF2PTX="${BPF2PTX:-$repo/target/release/bpf2ptx}"
cd "$repo"
mkdir -p "$here/obj" "$here/ptx"
for src in "$here"/src/*.bpf.c; do
	name="$(basename "$src" .bpf.c)"
	"$CLANG14" -target bpf -O2 -g -mcpu=v3 \
		-I/usr/include/x86_64-linux-gnu -I"$repo/runtime-ptx/include" \
		-fdebug-prefix-map="$repo"=. \
		-c "benches/gpu-runtime/src/$name.bpf.c" -o "$here/obj/$name.o"
	gran=thread
	[ "$name" = warp_array ] && gran=warp
	# The device rows: every map in device memory (a ring's default is host memory).
	device=()
	[ "$name" = ring_output ] && device=(--map ring=device)
	"$BPF2PTX" "$here/obj/$name.o" --entry --granularity "$gran" --target sm_90 \
		"${device[@]}" -o "$here/ptx/$name.ptx"
	# Arrays only added to are sharded automatically; the unsharded variant for the
	# side-by-side rows keeps one copy.
	case "$name" in array_1 | array_n | warp_array)
		"$BPF2PTX" "$here/obj/$name.o" --entry --granularity "$gran" --target sm_90 \
			--map slots=unsharded -o "$here/ptx/$name.unsharded.ptx"
		"$BPF2PTX" "$here/obj/$name.o" --entry --granularity "$gran" --target sm_90 \
			--map slots=unsharded --map slots=host -o "$here/ptx/$name.unsharded.host.ptx" ;;
	esac
	# Host placement: the same program built with `--map NAME=host` (.sys atomics).
	map=$(case "$name" in array_*|warp_array) echo slots ;; hash_add) echo counts ;;
		hash_update) echo vals ;; ring_output) echo ring ;; thread_array) echo mine ;; esac)
	if [ -n "$map" ]; then
		"$BPF2PTX" "$here/obj/$name.o" --entry --granularity "$gran" --target sm_90 \
			--map "$map=host" -o "$here/ptx/$name.host.ptx"
	fi
	echo "wrote obj/$name.o ptx/$name.ptx ($gran)"
done
