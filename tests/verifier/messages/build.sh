#!/usr/bin/env bash
# Rebuild the objects of the verifier's message snapshots (tests/verifier/messages/
# *.bpf.c -> *.bpf.o): each source makes one mistake probe authors make, and
# tests/tests/verifier_messages.rs compares `bpf2ptx verify`'s message for it with
# tests/out/verify/. The objects are committed, so the tests need no clang; run this only
# after changing a source:
#
#     bash tests/verifier/messages/build.sh
#
# clang 14 as for examples/probes, debug paths relative to the repository root
# (-fdebug-prefix-map), so the source line the message shows is found from the root.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
CLANG="${CLANG:-clang-14}"
command -v "$CLANG" >/dev/null || { echo "build.sh: $CLANG not found (apt-get install clang-14)" >&2; exit 1; }
[ -f /usr/include/bpf/bpf_helpers.h ] || { echo "build.sh: apt-get install libbpf-dev" >&2; exit 1; }
cd "$repo"
for src in tests/verifier/messages/*.bpf.c; do
	out="${src%.c}.o"
	"$CLANG" -target bpf -O2 -g -mcpu=v3 \
		-I/usr/include/x86_64-linux-gnu -I"$repo/runtime-ptx/include" \
		-fdebug-prefix-map="$repo"=. -c "$src" -o "$out"
	echo "wrote $out"
done
