#!/bin/sh
# Fuzzes the loader (or, with TARGET=inject, probe injection over PTX text; with
# TARGET=compile, verification and lowering of whatever loads) for SECONDS (default 600)
# with one job:
#   fuzz/run.sh [SECONDS] [extra libFuzzer flags...]
#   TARGET=inject fuzz/run.sh [SECONDS]
#   TARGET=compile fuzz/run.sh [SECONDS]
# Uses the main workspace's Cargo.lock, seeds fuzz/corpus/load (seed.sh), and lets the
# stable toolchain take cargo-fuzz's nightly flags (RUSTC_BOOTSTRAP=1, see README.md).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
secs=${1:-600}
[ $# -gt 0 ] && shift
cp "$here/../Cargo.lock" "$here/Cargo.lock"
"$here/seed.sh"
cd "$here"
if [ "${TARGET:-load}" = inject ]; then
    # Seeds: the nvcc/clang PTX fixtures and the example applications.
    mkdir -p corpus/inject
    cp ../tests/inject/ptx/*.ptx ../examples/apps/*.ptx corpus/inject/
    RUSTC_BOOTSTRAP=1 exec cargo fuzz run inject corpus/inject -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 "$@"
fi
if [ "${TARGET:-load}" = compile ]; then
    # Seeds: the loader's, plus the verifier's text cases (rings, helpers, loops).
    mkdir -p corpus/compile
    cp corpus/load/* ../tests/verifier/*.s corpus/compile/
    RUSTC_BOOTSTRAP=1 exec cargo fuzz run compile corpus/compile -- \
        -dict=load.dict -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 "$@"
fi
RUSTC_BOOTSTRAP=1 exec cargo fuzz run load corpus/load -- \
    -dict=load.dict -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 "$@"
