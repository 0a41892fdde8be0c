#!/usr/bin/env bash
# The test command of README.md: on a fresh machine with the Rust toolchain and python3, it
# installs what the tests need that cargo does not bring — ptxas, from PyPI's
# nvidia-cuda-nvcc-cu12, into the repository's .venv, where tests/tests/ptxas.rs and the
# runtime's ptxas tests look for it — and then runs every test of the workspace.
#
#     bash tests/run.sh [extra cargo test arguments]
#
# Without network access to PyPI it says so and stops: the PTX tests cannot run without
# ptxas (set BPF2PTX_SKIP_PTXAS=1 to run the rest anyway).
#
# The tests that compile C probes need clang with the BPF target and libbpf-dev's headers
# (apt-get install clang libbpf-dev; .ci/run installs them). Without a clang it says so
# and stops (set BPF2PTX_SKIP_CLANG=1 to run the rest anyway).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
have_clang() {
	[ -n "${BPF2PTX_CLANG:-}" ] && return 0
	command -v clang >/dev/null && return 0
	compgen -c clang- | grep -qE '^clang-[0-9]+$'
}
if [ "${BPF2PTX_SKIP_CLANG:-0}" != 1 ] && ! have_clang; then
	echo "tests/run.sh: no clang: the tests that compile C probes need clang and libbpf-dev (apt-get install clang libbpf-dev), or set BPF2PTX_SKIP_CLANG=1 to skip them" >&2
	exit 1
fi
ptxas() { ls .venv/lib/python3*/site-packages/nvidia/cuda_nvcc/bin/ptxas 2>/dev/null | head -n 1; }
if [ -z "${PTXAS:-}" ] && [ "${BPF2PTX_SKIP_PTXAS:-0}" != 1 ] && [ -z "$(ptxas)" ]; then
	echo "tests/run.sh: installing ptxas (nvidia-cuda-nvcc-cu12) into .venv"
	[ -x .venv/bin/pip ] || python3 -m venv .venv
	if ! .venv/bin/pip install -q --disable-pip-version-check nvidia-cuda-nvcc-cu12; then
		echo "tests/run.sh: could not install ptxas from PyPI; set PTXAS=/path/to/ptxas or BPF2PTX_SKIP_PTXAS=1" >&2
		exit 1
	fi
fi
exec cargo test --workspace --locked "$@"
