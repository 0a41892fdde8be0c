# SPDX-License-Identifier: MIT OR Apache-2.0
"""A PyTorch program with a C++/CUDA extension built with `+PTX`, for
tests/gpu/trace_torch.py: the extension's kernels (torch_ext/ops.cu) are what
`bpf2ptx trace` can probe; torch's own kernels (random numbers, an add, a reduction, a
matmul through cuBLAS) are SASS only and must run untouched.

    python3 tests/gpu/trace/torch_app.py build DIR   # build the extension into DIR
    python3 tests/gpu/trace/torch_app.py run DIR     # import it from DIR and run

Building is a step of its own, run without the trace: the two runs being compared then
load one and the same extension binary, and nvcc's processes stay out of the traced one.
It uses torch.utils.cpp_extension.load when ninja is there (load needs it) and else
setuptools with BuildExtension(use_ninja=False), which compiles without ninja; both pass
TORCH_CUDA_ARCH_LIST (default "9.0+PTX": `-gencode=arch=compute_90,code=sm_90
-gencode=arch=compute_90,code=compute_90`) to nvcc. torch's CUDA headers include cuBLAS,
cuSPARSE and cuSOLVER headers from CUDA_HOME; a CUDA_HOME without them (only the
compiler) gets those of torch's nvidia pip dependencies (library_headers).

`run` prints on stdout what it computed (checksums summed in float64 on the CPU, so the
same kernels give the same text) and whether each result agrees with torch's own
operators and with the CPU; on stderr one `model NAME launches L grid G block B` line per
extension kernel (torch's kernels are not in the model: nothing may count them). Exit 1
when a result disagrees.
"""
import glob
import importlib
import os
import sys

NAME = "trace_torch_ext"
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "torch_ext", "ops.cu")

SCALE_ADD_N = 1_000_003  # not a multiple of 256: a partial last block
SCALE_ADD_LAUNCHES = 3
ROWS, COLS = 777, 1000
ROW_SUM_LAUNCHES = 2


def library_headers(ce, out_dir):
    """A folder of links to the cuBLAS, cuSPARSE and cuSOLVER headers, for a CUDA_HOME
    that lacks them (a compiler-only toolkit), or None when it has them. torch's
    ATen/cuda/CUDAContext.h includes them from CUDA_HOME; torch's own pip dependencies
    ship them (site-packages/nvidia/cu13/include, or nvidia/LIB/include for CUDA 12).
    Only these headers are linked, so the toolkit's own runtime headers, which match its
    nvcc, stay the ones found."""
    home = ce.CUDA_HOME or ""
    if os.path.exists(os.path.join(home, "include", "cusparse.h")):
        return None
    found = {}
    for base in sys.path:
        for inc in sorted(glob.glob(os.path.join(base, "nvidia", "*", "include"))):
            for h in os.listdir(inc):
                if h.startswith(("cublas", "cusparse", "cusolver")) and h.endswith(".h"):
                    found.setdefault(h, os.path.join(inc, h))
    if "cusparse.h" not in found:
        print(f"no cusparse.h in CUDA_HOME ({home}) nor in nvidia pip packages: "
              "torch's CUDA headers will not compile", flush=True)
        return None
    links = os.path.join(out_dir, "library-headers")
    os.makedirs(links, exist_ok=True)
    for h, path in found.items():
        dst = os.path.join(links, h)
        if not os.path.lexists(dst):
            os.symlink(path, dst)
    print(f"CUDA_HOME ({home}) has no cusparse.h: using {len(found)} cuBLAS, cuSPARSE and "
          f"cuSOLVER headers of the nvidia pip packages ({links})", flush=True)
    return links


def build(out_dir):
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0+PTX")
    os.makedirs(out_dir, exist_ok=True)
    from torch.utils import cpp_extension as ce
    extra = library_headers(ce, out_dir)
    includes = [extra] if extra else []
    try:  # a private function of torch: only said, not relied on
        flags = " ".join(ce._get_cuda_arch_flags())
    except Exception as e:  # noqa: BLE001
        flags = f"(could not ask torch: {e})"
    print(f"TORCH_CUDA_ARCH_LIST={os.environ['TORCH_CUDA_ARCH_LIST']}: nvcc gets {flags}",
          flush=True)
    if ce.is_ninja_available():
        print("building with torch.utils.cpp_extension.load (ninja)", flush=True)
        ce.load(name=NAME, sources=[SOURCE], build_directory=out_dir,
                extra_cuda_cflags=["-O2"], extra_include_paths=includes, verbose=True)
    else:
        print("no ninja: building with setuptools and BuildExtension(use_ninja=False)",
              flush=True)
        from setuptools import setup
        setup(name=NAME,
              ext_modules=[ce.CUDAExtension(NAME, [SOURCE], include_dirs=includes,
                                            extra_compile_args={"cxx": ["-O2"],
                                                                "nvcc": ["-O2"]})],
              cmdclass={"build_ext": ce.BuildExtension.with_options(use_ninja=False)},
              script_args=["build_ext", "--build-lib", out_dir,
                           "--build-temp", os.path.join(out_dir, "build-temp")])
    built = [f for f in os.listdir(out_dir) if f.startswith(NAME) and f.endswith(".so")]
    print(f"built {', '.join(built) or 'nothing'} in {out_dir}")
    return 0 if built else 1


def extension(out_dir):
    """The extension `build` put in `out_dir`, imported (tests/gpu/trace/ddp_app.py uses
    it too)."""
    if out_dir not in sys.path:
        sys.path.insert(0, out_dir)
    return importlib.import_module(NAME)


def run(out_dir):
    import torch
    ext = extension(out_dir)
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1234)
    bad = 0

    def report(what, t, ok):
        nonlocal bad
        bad += not ok
        print(f"{what}: checksum {float(t.detach().cpu().double().sum())!r} "
              f"agrees {bool(ok)}")

    # The extension's kernels.
    x = torch.randn(SCALE_ADD_N, device=dev, generator=g)  # torch's own kernel
    y = torch.randn(SCALE_ADD_N, device=dev, generator=g)
    for _ in range(SCALE_ADD_LAUNCHES):
        out = ext.scale_add(x, y, 2.0)
    want = torch.add(y, x, alpha=2.0)  # torch's own elementwise kernel
    report("scale_add", out, torch.allclose(out, want, rtol=1e-5, atol=1e-5))

    m = torch.rand(ROWS, COLS, device=dev, generator=g)
    for _ in range(ROW_SUM_LAUNCHES):
        rs = ext.row_sums(m)
    want = m.sum(dim=1)  # torch's own reduction kernel
    report("row_sums", rs, torch.allclose(rs, want, rtol=1e-4, atol=1e-3))

    # torch's own kernels only: cuBLAS (TF32 off, torch's default for float32 matmul).
    a = torch.rand(256, 256, device=dev, generator=g)
    b = torch.rand(256, 256, device=dev, generator=g)
    c = torch.matmul(a, b)
    report("matmul", c, torch.allclose(c.cpu(), a.cpu() @ b.cpu(), rtol=1e-4, atol=1e-3))
    torch.cuda.synchronize()

    grid = -(-SCALE_ADD_N // ext.SCALE_ADD_BLOCK)
    print(f"model ext_scale_add launches {SCALE_ADD_LAUNCHES} grid {grid} "
          f"block {ext.SCALE_ADD_BLOCK}", file=sys.stderr)
    print(f"model row_sum launches {ROW_SUM_LAUNCHES} grid {ROWS} block {ext.ROW_SUM_BLOCK}",
          file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        sys.exit(__doc__)
    sys.exit(build(sys.argv[2]) if sys.argv[1] == "build" else run(sys.argv[2]))
