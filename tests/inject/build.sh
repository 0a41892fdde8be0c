#!/usr/bin/env bash
# Rebuilds the PTX fixtures in tests/inject/ptx/ from tests/inject/src/*.cu.
# The PTX is committed, so the tests never need nvcc or clang; run this only after
# changing a source. Output names: <src>.<arch>[.G|.lineinfo].<compiler>.ptx
#
#   NVCC   nvcc to use (default: nvcc on PATH). CUDA 13 nvcc (pip install nvidia-cuda-nvcc)
#          has no sm_70, so nvcc builds sm_75 and sm_90.
#   CLANG  clang to use for the sm_70 builds (default: clang). No CUDA install is needed:
#          -nocudainc -nocudalib, with src/compat.h standing in for the CUDA headers
#          (and +ptx64: without a CUDA install clang assumes a PTX ISA too old for shfl.sync).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/src"
out="$here/ptx"
NVCC="${NVCC:-nvcc}"
CLANG="${CLANG:-clang}"
mkdir -p "$out"

nvcc_srcs=(vecadd matmul reduce ldg_vec calls)
clang_srcs=(vecadd matmul reduce ldg_vec)

for s in "${nvcc_srcs[@]}"; do
    for arch in 75 90; do
        "$NVCC" -ptx -arch=sm_$arch -O3 "$src/$s.cu" -o "$out/$s.sm$arch.nvcc.ptx"
        "$NVCC" -ptx -arch=sm_$arch -lineinfo "$src/$s.cu" -o "$out/$s.sm$arch.lineinfo.nvcc.ptx"
    done
    "$NVCC" -ptx -arch=sm_90 -G "$src/$s.cu" -o "$out/$s.sm90.G.nvcc.ptx"
done

for s in "${clang_srcs[@]}"; do
    "$CLANG" -x cuda --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch=sm_70 -Xclang -target-feature -Xclang +ptx64 -O2 -S \
        "$src/$s.cu" -o "$out/$s.sm70.clang.ptx"
    "$CLANG" -x cuda --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch=sm_70 -Xclang -target-feature -Xclang +ptx64 -O2 -g -S \
        "$src/$s.cu" -o "$out/$s.sm70.g.clang.ptx"
done
