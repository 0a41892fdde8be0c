# A Python program that compiles "Triton kernels" with the stand-in Triton of py/ (or
# py2/), as Triton's compile() runs its stages: for each NAME=PTX_FILE argument, the
# `ptx` stage, then the `cubin` stage on its output. Prints per kernel whether the text
# assembled holds the probes, and the caches it was given
# (cli/interposer/tests/trace_triton.rs). `--worker` first: the same again in a child
# process first, as TorchInductor's compile workers compile.
import os
import subprocess
import sys

import triton

print("sitecustomize", getattr(sys.modules.get("sitecustomize"), "MARK", "-"))
if not triton.__version__.startswith("3."):
    print("old triton")
    sys.exit(0)
from triton.backends.nvidia import compiler  # noqa: E402

if sys.argv[1:2] == ["--worker"]:
    del sys.argv[1]
    subprocess.run([sys.executable] + sys.argv, check=True)
for arg in sys.argv[1:]:
    name, path = arg.split("=", 1)
    stages = {}
    compiler.CUDABackend().add_stages(stages, None, None)
    metadata = {}
    ptx = stages["ptx"]({"name": name, "ptx": open(path).read()}, metadata)
    stages["cubin"](ptx, metadata)
    probed = "bpf2ptx_" in compiler.assembled[-1]
    print(name, "probed" if probed else "plain")
for var in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"):
    print(var, os.environ.get(var, "-"))
