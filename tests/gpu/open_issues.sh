#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The GPU checks of the open issues in one device call, in priority order (the issue
# numbers' order), each skipped once the call's deadline is near so that what ran comes
# back: every table and log goes to $OUT (the device tool's folder) and a summary line per
# step to stdout.
#
#     OUT=DIR DL=570 BPF2PTX=gpu-carry/bpf2ptx bash tests/gpu/open_issues.sh [STEP ...]
#
# STEP (default: all, in this order; NAME:SECONDS sets a step's time estimate):
#   sanitize  issue 14: every corpus program under compute-sanitizer memcheck
#   hash      issue 12: benches/gpu-hash, the published probe and insertion cases
#   hashall   issue 12: benches/gpu-hash, every case (churn, over-full, published, plain
#             increments, insert/update): the report of record
#   fuse      issue 19: benches/gpu/fuse.sh (native / today / fused / twins)
#   fuserandom issue 19: tests/gpu/fuse_random.py on gpu-carry/fuse-random (the cases of
#             tests/tests/fuse.rs, written here before carrying: BPF2PTX_FUSE_RANDOM_OUT=
#             $PWD/gpu-carry/fuse-random cargo test -p bpf2ptx-tests --test fuse random_probes;
#             an absolute folder: cargo runs the test in tests/)
#   build     issue 17: tests/gpu/build_integration.sh (CMake and Make examples)
#   readme    issue 16: the README's trace example (vector add under warp_time), for real
#   gpuoverhead issue 16: benches/gpu-trace/probe_overhead.py (kernel time: trace vs inject)
#   overhead  issue 16: benches/gpu-trace/launch_overhead.py (host cost per launch)
#   latency   issue 16: tests/gpu/trace_latency.py (host program + GPU probe)
#   latparts  issue 16: benches/gpu-trace/latency_parts.py (the app's latency per probe part)
#   latprobe  issue 16: the latency app under trace with latency_parts variants 9 and 10
#             (the probe times its own parts on the GPU; histograms of 1.024 us buckets
#             printed; 10 looks up a constant key), and whether the JIT'd PTX reads
#             `launch` from device memory (pushed)
#   lookup    issue 16: benches/gpu-trace/lookup_cost.py (latprobe's span lookup injected
#             with --rebind-maps and launched without the interposer: module storage,
#             a rebound table, one block)
#   frame     issue 19: benches/gpu/frame_experiment.py (an unused .local context frame's
#             cost: vecadd with the counters and mem_hist, with and without it)
#   hostread  issue 16: benches/gpu-trace/hostread.cu (a kernel's read of mapped pinned host
#             memory vs device memory, at block start)
#   apps      issue 16: tests/gpu/trace_apps.py (unmodified apps, counts vs a model)
#   torch     issue 16: tests/gpu/trace_torch.py (a PyTorch +PTX extension under trace)
#   triton    issue 18: tests/gpu/triton_attach.py (Triton matmul, bytes and wgmma)
#   softmax   issue 18: tests/gpu/triton_softmax.py (Triton softmax, bytes vs a model)
#   cub       issue 18: tests/gpu/cub_sort.py (CUB radix sort under trace, bytes vs a model)
#   compile   issue 18: tests/gpu/trace_compile.py (torch.compile MLP and attention under
#             trace: Triton kernels probed, launches and warp-time histograms)
#   corpus    issue 18: tests/gpu/corpus.py (real-world PTX regenerated here: CUB/Thrust,
#             Triton, XLA, a PyTorch extension; ptxas on every instrumented module,
#             results unchanged, every opcode in specs/abi.md's coverage table)
#   ddp       issue 20: tests/gpu/trace_ddp.py (PyTorch DDP step, a process per rank; two
#             GPUs: nccl, one each; one GPU: gloo, both ranks on device 0)
# DL: seconds from the start after which no step starts whose estimate does not fit.
# A step whose check exits 77 could not run here (a dependency missing: Triton, PyTorch,
# nvcc, CUB's headers; it says which): recorded as skipped, not as a failure.
#
# Every step's files go to $OUT/steps/, packed at the end (also when the call is stopped)
# into $OUT/results.tgz beside summary.txt: the device tool brings back a few files per
# call, so one archive carries them all.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
: "${OUT:?set OUT to the folder for the results}"
TOP=$OUT
OUT=$TOP/steps
mkdir -p "$OUT"
pack() {
	cp "$OUT/summary.txt" "$TOP/summary.txt" 2>/dev/null
	tar czf "$TOP/results.tgz" -C "$OUT" . && rm -rf "$OUT"
}
trap pack EXIT
trap 'exit 143' TERM INT
export BPF2PTX="$(realpath "${BPF2PTX:-target/release/bpf2ptx}")"
DL=${DL:-570}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
# The device's copy of .git can lag the working tree it runs; the carried binaries name
# the commit they were built at (gpu-carry/COMMIT, tests/gpu/README.md).
{
	git log --oneline -1 2>/dev/null
	commit="$(dirname "$BPF2PTX")/COMMIT"
	[ -f "$commit" ] && echo "binaries built at: $(cat "$commit")"
} | tee "$OUT/commit.txt"

step_sanitize() {
	timeout 120 bash tests/gpu/sanitize_all.sh >"$OUT/sanitize.log" 2>&1
	local rc=$?
	echo "programs clean: $(grep -c ' rc=0 ' "$OUT/sanitize.log"), not clean: $(grep '\.o ' "$OUT/sanitize.log" | grep -vc ' rc=0 ')"
	local first
	first=$(grep '\.o ' "$OUT/sanitize.log" | grep -v ' rc=0 ' | head -1)
	if [ -n "$first" ]; then
		# The whole memcheck report of the first program that was not clean.
		timeout 30 compute-sanitizer --tool memcheck --show-backtrace host "$BPF2PTX" run \
			"tests/corpus/obj/$(awk '{print $1}' <<<"$first")" --program "$(awk '{print $2}' <<<"$first")" \
			--target sm_90 --grid 2 --block 64 --maps >"$OUT/memcheck_first.log" 2>&1
		grep -v '^=========     ' "$OUT/memcheck_first.log" | head -30
	fi
	return $rc
}
# Every case of issue 12's Must-hold (churn per warp and per thread, over-full, published,
# plain increments, insert/update), the report of record.
step_hashall() {
	REPORT="$OUT/hash-maps-all.md" timeout 300 bash benches/gpu-hash/run.sh /tmp/bpf2ptx-hash \
		--budget 260 >"$OUT/hashall.log" 2>&1
	local rc=$?
	tail -40 "$OUT/hashall.log"
	return $rc
}
step_hash() {
	REPORT="$OUT/hash-maps.md" timeout 150 bash benches/gpu-hash/run.sh /tmp/bpf2ptx-hash \
		--cases published,insert --budget 120 >"$OUT/hash.log" 2>&1
	local rc=$?
	tail -25 "$OUT/hash.log"
	return $rc
}
step_fuse() {
	REPS=20 timeout 170 bash benches/gpu/fuse.sh "$OUT/fuse.md" /tmp/bpf2ptx-fuse >"$OUT/fuse.log" 2>&1
	local rc=$?
	tail -30 "$OUT/fuse.md" 2>/dev/null || tail -30 "$OUT/fuse.log"
	return $rc
}
step_overhead() { timeout 90 python3 benches/gpu-trace/launch_overhead.py "$OUT/launch-overhead.md" 5 2>&1 | tail -12; }
step_gpuoverhead() { timeout 110 python3 benches/gpu-trace/probe_overhead.py "$OUT/trace-probe-overhead.md" 5 2>&1 | tail -14; }
step_latparts() { timeout 100 python3 benches/gpu-trace/latency_parts.py "$OUT/latency-parts.md" 2>&1 | tail -12; }
step_latprobe() {
	nvcc -O2 -arch=sm_90 examples/trace_latency/latency_app.cu -o /tmp/la || return 1
	local rc=0 part
	# 9: the lookup's key from the pushed `launch` word; 10: a constant key.
	for part in 9 10; do
		XDG_CACHE_HOME=/tmp/latprobe-cache$part timeout 60 "$BPF2PTX" trace --interval 60s \
			-o "$OUT/latprobe$part.txt" benches/gpu-trace/probes/latency_part$part.bpf.o \
			-- /tmp/la 20 >"$OUT/latprobe$part.out" 2>"$OUT/latprobe$part.err" || rc=$?
		echo "-- variant $part"
		grep -A70 "t_read\|t_lookup\|t_whole" "$OUT/latprobe$part.txt" | grep -v "^\s*$" | head -45
		# The span table the lookups walk: it should hold no key (nothing inserts).
		grep -A2 "spans" "$OUT/latprobe$part.txt" | tail -3
		tail -2 "$OUT/latprobe$part.err"
	done
	echo "launch map in the JIT'd PTX (address word = pushed, device memory; descriptor = pinned):"
	grep -rhoa "bpf2ptx_mapaddr_launch\|bpf2ptx_map_launch+24\]" /tmp/latprobe-cache9 | sort | uniq -c
	# The JIT cache (the instrumented PTX in each key, the cubin after it): its SASS is
	# what ran.
	tar czf "$OUT/latprobe-cache.tgz" -C /tmp/latprobe-cache9 . 2>/dev/null
	return $rc
}
step_fuserandom() {
	timeout 200 python3 tests/gpu/fuse_random.py gpu-carry/fuse-random "$OUT/fuse-random.md" \
		>"$OUT/fuse-random.log" 2>&1
	local rc=$?
	head -3 "$OUT/fuse-random.log"
	grep -v "| ok |" "$OUT/fuse-random.log" | tail -15
	return $rc
}
step_lookup() { timeout 60 python3 benches/gpu-trace/lookup_cost.py 20 | tee "$OUT/lookup-cost.md"; }
step_frame() { timeout 90 python3 benches/gpu/frame_experiment.py 30 5 | tee "$OUT/frame-experiment.md"; }
step_hostread() { nvcc -O2 -arch=sm_90 benches/gpu-trace/hostread.cu -o /tmp/hostread && timeout 60 /tmp/hostread 30 | tee "$OUT/hostread.md"; }
step_latency() { timeout 90 python3 tests/gpu/trace_latency.py "$OUT/trace-latency.md" >"$OUT/trace-latency.log" 2>&1; local rc=$?; tail -25 "$OUT/trace-latency.log"; return $rc; }
step_apps() { timeout 100 python3 tests/gpu/trace_apps.py "$OUT/trace-apps.md" >"$OUT/trace-apps.log" 2>&1; local rc=$?; tail -20 "$OUT/trace-apps.log"; return $rc; }
step_torch() { timeout 150 python3 tests/gpu/trace_torch.py "$OUT/trace-torch.md" >"$OUT/trace-torch.log" 2>&1; local rc=$?; tail -25 "$OUT/trace-torch.log"; return $rc; }
step_build() { timeout 170 bash tests/gpu/build_integration.sh /tmp/bpf2ptx-build >"$OUT/build-integration.log" 2>&1; local rc=$?; tail -40 "$OUT/build-integration.log"; return $rc; }
step_triton() { timeout 150 python3 tests/gpu/triton_attach.py "$OUT/triton-attach.md" --size 4096 >"$OUT/triton-attach.log" 2>&1; local rc=$?; tail -30 "$OUT/triton-attach.log"; return $rc; }
step_softmax() { timeout 100 python3 tests/gpu/triton_softmax.py "$OUT/triton-softmax.md" >"$OUT/triton-softmax.log" 2>&1; local rc=$?; tail -30 "$OUT/triton-softmax.log"; return $rc; }
step_cub() { timeout 140 python3 tests/gpu/cub_sort.py "$OUT/cub-sort.md" >"$OUT/cub-sort.log" 2>&1; local rc=$?; tail -30 "$OUT/cub-sort.log"; return $rc; }
step_compile() { timeout 170 python3 tests/gpu/trace_compile.py "$OUT/trace-compile.md" >"$OUT/trace-compile.log" 2>&1; local rc=$?; tail -30 "$OUT/trace-compile.log"; return $rc; }
# The corpus's PTX (not the instrumented copies) comes back as corpus-ptx.tar.gz, for
# tests/tests/corpus_cpu.rs (BPF2PTX_CORPUS_DIR) on the development machine.
step_corpus() {
	CORPUS_ARCHIVE="$OUT/corpus-ptx.tar.gz" timeout 330 python3 tests/gpu/corpus.py "$OUT/corpus.md" >"$OUT/corpus.log" 2>&1
	local rc=$?
	grep -E '^\| |checks pass|^work directory|^SKIP' "$OUT/corpus.log" | tail -45
	return $rc
}
# The README's `bpf2ptx trace` example, run for real: bpftime's vector add built by nvcc
# as users build it, traced with the gallery's warp_time probe.
step_readme() {
	local d=/tmp/bpf2ptx-readme
	mkdir -p $d && nvcc -arch=sm_90 -o $d/vector_add tests/gpu/trace/vector_add.cu &&
		(cd $d && timeout 60 "$BPF2PTX" trace "$OLDPWD/examples/probes/warp_time.bpf.o" \
			--hist warp_hist=log2 --rows 4 -- ./vector_add 3) \
			>"$OUT/readme-trace.txt" 2>&1
	local rc=$?
	cat "$OUT/readme-trace.txt"
	return $rc
}
step_ddp() { timeout 150 python3 tests/gpu/trace_ddp.py "$OUT/trace-ddp.md" >"$OUT/trace-ddp.log" 2>&1; local rc=$?; tail -25 "$OUT/trace-ddp.log"; return $rc; }

declare -A EST=([sanitize]=45 [hash]=140 [hashall]=290 [fuse]=120 [overhead]=60 [latency]=50 [latparts]=60 [hostread]=15 [frame]=40 [fuserandom]=100 [latprobe]=45 [lookup]=40 [apps]=80 [build]=140 [triton]=120 [softmax]=80 [cub]=110 [compile]=140 [corpus]=250 [ddp]=120 [readme]=20 [gpuoverhead]=80 [torch]=100)
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(sanitize hash fuse build readme gpuoverhead overhead latency apps torch triton softmax cub compile corpus ddp)
for s in "${steps[@]}"; do
	name=${s%%:*}
	est=${EST[$name]:-60}
	[ "$s" = "$name" ] || est=${s##*:}
	if [ $((SECONDS + est)) -gt "$DL" ]; then
		echo "== $name: skipped (deadline)" | tee -a "$OUT/summary.txt"
		continue
	fi
	echo "== $name"
	start=$SECONDS
	"step_$name"
	rc=$?
	if [ $rc -eq 77 ]; then
		echo "== $name: skipped (a dependency is missing; see its log), $((SECONDS - start)) s" | tee -a "$OUT/summary.txt"
	else
		echo "== $name: rc=$rc, $((SECONDS - start)) s" | tee -a "$OUT/summary.txt"
	fi
done
