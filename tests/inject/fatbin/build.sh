#!/usr/bin/env bash
# Rebuilds the fatbin/ELF fixtures of tests/tests/fatbin.rs from tests/inject/src/*.cu.
# The outputs are committed (CI never runs this); see README.md for what each one is.
#
#   NVCC   nvcc to use (default: nvcc on PATH; fatbinary must sit next to it). Built with
#          CUDA 13.5 from `pip install nvidia-cuda-nvcc` (no sm_70, hence sm_75/sm_90).
#   NVCC_13_0  nvcc 13.0 for vecadd.sm_90a.o, vecadd.multi.o and vecadd.13.0.* (default:
#          NVCC; the committed ones are 13.0.88's, `pip install nvidia-cuda-nvcc==13.0.88`).
#   CC     C compiler for the host stubs and the final link (default: gcc; g++ links).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../src"
out="$here"
NVCC="${NVCC:-nvcc}"
CC="${CC:-gcc}"
FATBINARY="$(dirname "$(command -v "$NVCC")")/fatbinary"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

p90=(-gencode arch=compute_90,code=compute_90)
p75=(-gencode arch=compute_75,code=compute_75)
s90=(-gencode arch=compute_90,code=sm_90)
s75=(-gencode arch=compute_75,code=sm_75)
v="$src/vecadd.cu"

# References: what `nvcc -ptx` gives for each (source, arch) the containers carry.
"$NVCC" -ptx -arch=compute_90 "$v" -o "$out/vecadd.compute_90.ptx"
"$NVCC" -ptx -arch=compute_75 "$v" -o "$out/vecadd.compute_75.ptx"
"$NVCC" -ptx -rdc=true -arch=compute_90 "$v" -o "$out/vecadd.rdc.compute_90.ptx"
"$NVCC" -ptx -arch=compute_75 "$src/reduce.cu" -o "$out/reduce.compute_75.ptx"

# Fatbins: PTX only, in every compression mode nvcc offers.
"$NVCC" -fatbin "${p90[@]}" "$v" -o "$out/vecadd.ptx.fatbin"
for mode in none default size speed balance; do
    "$NVCC" -fatbin "${p90[@]}" --compress-mode="$mode" "$v" -o "$out/vecadd.ptx.$mode.fatbin"
done
"$NVCC" -fatbin "${p90[@]}" -Xfatbin -compress-all "$v" -o "$out/vecadd.ptx.compress-all.fatbin"
# --concat: both PTX images in one packed entry (zstd, and LZ4 with mode speed).
"$NVCC" -fatbin "${p90[@]}" "${p75[@]}" --concat "$v" -o "$out/vecadd.concat.fatbin"
"$NVCC" -fatbin "${p90[@]}" "${p75[@]}" --concat --compress-mode=speed "$v" -o "$out/vecadd.concat.speed.fatbin"
# An identifier in the entry header (nvcc itself sets one only for -G builds, to the
# absolute source path, which would not be reproducible).
"$FATBINARY" --create="$out/vecadd.ident.fatbin" -64 --ident=vecadd.cu \
    "--image3=kind=ptx,sm=90,file=$out/vecadd.compute_90.ptx"
# SASS and PTX together, and SASS alone (the NoPtx error).
"$NVCC" -fatbin "${s90[@]}" "${p90[@]}" "${s75[@]}" "$v" -o "$out/vecadd.sass-ptx.fatbin"
"$NVCC" -fatbin "${s90[@]}" "${s75[@]}" "$v" -o "$out/vecadd.sass.fatbin"
"$NVCC" -cubin -arch=sm_90 "$v" -o "$out/vecadd.sm_90.cubin"

# ELF: objects (whole-program: .nv_fatbin; -rdc: __nv_relfatbin), a shared library and an
# executable. -cudart none and stub registration functions keep libcudart out, so the
# files stay small; they are only read, never run.
"$NVCC" -c "${p90[@]}" "$v" -o "$out/vecadd.o"
"$NVCC" -c -rdc=true "${p90[@]}" "$v" -o "$out/vecadd.rdc.o"
# PTX for several virtual architectures in one object: -arch=sm_90a (nvcc 13 keeps
# compute_90 PTX beside compute_90a's, both `compute_90` in the entry header) and two
# -gencode; what cli/cmake/bpf2ptx-embed instruments one architecture at a time. Built
# with nvcc 13.0.88, the GPU machine's (NVCC_13_0), with their references.
NVCC_13_0="${NVCC_13_0:-$NVCC}"
for a in 75 90 90a; do
    "$NVCC_13_0" -ptx -arch=compute_$a "$v" -o "$out/vecadd.13.0.compute_$a.ptx"
done
"$NVCC_13_0" -c -arch=sm_90a "$v" -o "$out/vecadd.sm_90a.o"
"$NVCC_13_0" -c -gencode 'arch=compute_75,code=[compute_75,sm_75]' \
    -gencode 'arch=compute_90,code=[compute_90,sm_90]' "$v" -o "$out/vecadd.multi.o"
"$NVCC" -shared -Xcompiler -fPIC -cudart none "${p90[@]}" "$v" -o libvecadd.so
strip libvecadd.so -o "$out/libvecadd.so"
"$NVCC" -c "${p75[@]}" "${s90[@]}" "$src/reduce.cu" -o reduce.o
cat > stubs.c <<'C'
/* The CUDA runtime's registration entry points, as no-ops: the fixture is never run. */
void **__cudaRegisterFatBinary(void *fatbin) { (void)fatbin; return 0; }
void __cudaRegisterFatBinaryEnd(void **h) { (void)h; }
void __cudaUnregisterFatBinary(void **h) { (void)h; }
void __cudaRegisterFunction(void) {}
int __cudaPopCallConfiguration(void) { return 0; }
int __cudaLaunchKernel(void) { return 0; }
int __cudaGetKernel(void) { return 0; }
int main(void) { return 0; }
C
"$CC" -c stubs.c -o stubs.o
"$CC" "$out/vecadd.o" reduce.o stubs.o -o app -lstdc++
strip app -o "$out/app"
