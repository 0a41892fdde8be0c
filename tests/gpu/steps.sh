# Sourced by the one-call GPU scripts (run_all.sh, issue12.sh): `step NAME LIMIT CMD...`
# runs CMD with a timeout, its output in $out/NAME.log, and adds one line (name, exit
# code, seconds, the log's last line) to `summary`; `finish` prints the summary into
# $out/summary.txt and fails if any step did.
summary=()
step() { # name, timeout in seconds, command...
	local name=$1 limit=$2
	shift 2
	local t0=$SECONDS
	timeout "$limit" "$@" >"$out/$name.log" 2>&1
	local rc=$?
	summary+=("$(printf '%-14s rc=%-3d %4ds  %s' "$name" "$rc" $((SECONDS - t0)) "$(tail -n 1 "$out/$name.log")")")
}
finish() {
	printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
	! grep -q 'rc=[1-9]' "$out/summary.txt"
}
