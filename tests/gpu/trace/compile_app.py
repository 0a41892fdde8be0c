# SPDX-License-Identifier: MIT OR Apache-2.0
"""torch.compile'd models for tests/gpu/trace_compile.py (issue 18): a small MLP
(Linear, GELU, Linear, residual, LayerNorm) and an attention block (QKV projections,
softmax(QK^T / sqrt(d)) V written out, output projection, residual, LayerNorm), each
compiled with torch.compile (inductor, default mode): their matmuls go to cuBLAS (SASS,
not probed), their pointwise and reduction parts to Triton kernels, which Triton builds
from PTX it generates: what `bpf2ptx trace` is to instrument.

    python3 tests/gpu/trace/compile_app.py OUT.pt [--profile PROFILE.json]

Each model is called CALLS times on fixed inputs (weights and inputs made on the CPU with
a fixed seed); the last call's outputs go to OUT.pt ({"mlp": tensor, "attention":
tensor}), compared bit for bit by the checker; stdout gets one checksum line per model.

The configuration keeps the kernels and their launches the same from run to run, so that
an untraced run is the model of a traced one:
- inductor's runtime autotuning off (`triton.autotune_pointwise = False`: one config per
  pointwise and reduction kernel, so no kernel is launched to benchmark configs), and no
  dynamic scaling of reduction blocks (which would add configs to benchmark);
- inductor's deterministic mode (`deterministic`, torch.use_deterministic_algorithms's
  inductor side): no config is chosen by timing it. Why: an instrumented kernel times
  differently, so a config chosen by benchmarking may differ under trace, and a reduction
  of another config rounds differently (on an H100 the attention's softmax did: outputs
  not bit-equal, 3 configs benchmarked untraced and 1 traced);
- kernels compiled in this process (`compile_threads = 1`) into caches that start empty
  (the checker gives the untraced run fresh TRITON_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR;
  `bpf2ptx trace` gives the traced run caches of its own under a fresh XDG_CACHE_HOME), so
  every run compiles every kernel and the checker can read the PTX Triton cached. Not
  `force_disable_caches`: with it Triton's PTX went to no cache the checker could read;
- fp32 without TF32, so cuBLAS's results do not depend on a TF32 choice.
A config this torch lacks is skipped and said on stderr.

--profile wraps the whole run (compilation included: whatever it launches is launched in
the traced run too) in torch.profiler with CUDA activity and writes, per kernel name, its
launches and the warps they ran (grid x ceil(block / 32), from the Chrome trace's kernel
events), with the torch and Triton versions. The traced run does not profile.
"""
import json
import os
import sys


def configure(torch):
    import torch._inductor.config as ic
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for path, value in (("triton.autotune_pointwise", False), ("dynamic_scale_rblock", False),
                        ("compile_threads", 1), ("deterministic", True),
                        ("triton.cudagraphs", False)):
        obj, *rest = path.split(".")
        target = ic
        if rest:
            target = getattr(ic, obj, None)
            obj = rest[0]
        if target is not None and hasattr(target, obj):
            setattr(target, obj, value)
        else:
            print(f"compile_app: no inductor config {path} in torch {torch.__version__}",
                  file=sys.stderr)


def models(torch):
    nn = torch.nn

    class MLP(nn.Module):
        def __init__(self, d=512, hidden=2048):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)
            self.norm = nn.LayerNorm(d)

        def forward(self, x):
            return self.norm(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))

    class Attention(nn.Module):
        def __init__(self, d=256, heads=4):
            super().__init__()
            self.heads, self.dh = heads, d // heads
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.norm = nn.LayerNorm(d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(x).split(d, dim=-1)
            q, k, v = (z.view(b, t, self.heads, self.dh).transpose(1, 2) for z in (q, k, v))
            att = torch.softmax((q @ k.transpose(-2, -1)) / self.dh ** 0.5, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, d)
            return self.norm(x + self.out(y))

    torch.manual_seed(0)
    mlp, attention = MLP().eval(), Attention().eval()
    x_mlp, x_att = torch.randn(256, 512), torch.randn(4, 128, 256)
    return [("mlp", mlp.cuda(), x_mlp.cuda()), ("attention", attention.cuda(), x_att.cuda())]


CALLS = 5


def run(torch):
    outs = {}
    with torch.no_grad():
        for name, model, x in models(torch):
            compiled = torch.compile(model, fullgraph=True, dynamic=False)
            for _ in range(CALLS):
                y = compiled(x)
            torch.cuda.synchronize()
            outs[name] = y.cpu()
            print(f"{name}: calls {CALLS} shape {tuple(y.shape)} "
                  f"checksum {y.double().sum().item():.17g} abs {y.double().abs().sum().item():.17g}")
    return outs


def kernel_counts(trace_file):
    """Per kernel name: launches and warps, from a Chrome trace torch.profiler wrote
    (its `kernel` events, `args` `grid` and `block`); warps None for a kernel one of
    whose events lacks them."""
    with open(trace_file) as f:
        events = json.load(f).get("traceEvents", [])
    out = {}
    for e in events:
        if e.get("cat") != "kernel" or e.get("ph") != "X":
            continue
        args = e.get("args", {})
        k = out.setdefault(e["name"], {"launches": 0, "warps": 0})
        k["launches"] += 1
        grid, block = args.get("grid"), args.get("block")
        if grid and block and k["warps"] is not None:
            threads = block[0] * block[1] * block[2]
            k["warps"] += grid[0] * grid[1] * grid[2] * -(-threads // 32)
        else:
            k["warps"] = None  # a launch without its dimensions: warps unknown
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: compile_app.py OUT.pt [--profile PROFILE.json]")
    import torch
    configure(torch)
    profile = sys.argv[sys.argv.index("--profile") + 1] if "--profile" in sys.argv else None
    if profile:
        from torch.profiler import ProfilerActivity, profile as prof
        with prof(activities=[ProfilerActivity.CUDA]) as p:
            outs = run(torch)
        chrome = profile + ".trace.json"
        p.export_chrome_trace(chrome)
        try:
            import triton
            tv = triton.__version__
        except ImportError:
            tv = None
        with open(profile, "w") as f:
            json.dump({"torch": torch.__version__, "triton": tv, "pid": os.getpid(),
                       "kernels": kernel_counts(chrome)}, f, indent=1)
    else:
        outs = run(torch)
    torch.save(outs, sys.argv[1])


if __name__ == "__main__":
    main()
