#!/usr/bin/env bash
# Every program of every corpus object on the GPU under compute-sanitizer memcheck, on 128
# threads with its maps read back. Prints one line per program; exits non-zero if any run
# reports a memory error or fails.
#   BPF2PTX=./target/release/bpf2ptx bash tests/gpu/sanitize_all.sh
set -u
B=${BPF2PTX:-./target/release/bpf2ptx}
fail=0
for o in tests/corpus/obj/*.o; do
	for p in $("$B" dump --format json "$o" | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)["programs"]))'); do
		out=$(compute-sanitizer --tool memcheck --error-exitcode 9 "$B" run "$o" --program "$p" --target sm_90 --grid 2 --block 64 --maps 2>&1)
		rc=$?
		summary=$(grep -o 'ERROR SUMMARY: [0-9]* errors' <<<"$out")
		printf '%-32s %-16s rc=%d %s\n' "$(basename "$o")" "$p" "$rc" "$summary"
		[ "$rc" -eq 0 ] || fail=1
	done
done
exit $fail
