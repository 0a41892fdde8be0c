#!/usr/bin/env bash
# Every verifier text case that `bpf2ptx verify` accepts (as a GPU probe: empty context),
# run on the GPU under compute-sanitizer memcheck on one warp with its maps read back.
# Cases written for the bpf_conformance entry (`# entry: mem N`) are verified with r1 as
# N bytes of memory, which a probe does not have, so `verify` rejects them here: skipped.
#   BPF2PTX=./target/release/bpf2ptx bash tests/gpu/sanitize_cases.sh
set -u
B=${BPF2PTX:-./target/release/bpf2ptx}
ran=0; clean=0; skipped=0
for f in tests/verifier/*.s; do
	if ! "$B" verify "$f" >/dev/null 2>&1; then
		skipped=$((skipped + 1))
		continue
	fi
	ran=$((ran + 1))
	out=$(compute-sanitizer --tool memcheck --error-exitcode 9 "$B" run "$f" --target sm_90 --grid 1 --block 32 --maps 2>&1)
	if [ $? -eq 0 ] && grep -q 'ERROR SUMMARY: 0 errors' <<<"$out"; then
		clean=$((clean + 1))
	else
		echo "FAIL $f"
		grep -E 'ERROR|error' <<<"$out" | head -5
	fi
done
echo "accepted cases run: $ran, clean: $clean, not accepted as probes (skipped): $skipped"
[ "$ran" -eq "$clean" ]
