# SPDX-License-Identifier: MIT OR Apache-2.0
"""A PyTorch DDP training step for tests/gpu/trace_ddp.py (issue 20): two ranks, each a
process of its own, started by this script with torch.multiprocessing.spawn, so that
one `bpf2ptx trace` of this script covers the whole process tree.

    python3 tests/gpu/trace/ddp_app.py run EXT REPORTS

EXT: the folder tests/gpu/trace/torch_app.py `build` put the extension in (torch_ext/ops.cu,
built with TORCH_CUDA_ARCH_LIST "9.0+PTX", so its kernels carry PTX and can be probed).
REPORTS: a folder this script writes `setup.json` and one `rank-R.json` per rank into.

- With two GPUs or more: backend nccl, rank r on device r, NCCL_NVLS_ENABLE=0 set (and
  kept set for the ranks, who inherit it). With one: backend gloo, both ranks on device 0
  (NCCL refuses two ranks on one device). No GPU: exit 77.
- The model: y = 0.5 * Linear(x) + x through the extension's `ext_scale_add`, the loss the
  mean of the extension's `row_sum` of y * y. torch's own kernels (cuBLAS's matmul,
  random numbers, the elementwise ops, the optimizer, the collectives' kernels) run
  beside them; they are SASS only in torch's wheels. `scale_add`'s backward launches
  `ext_scale_add` again, from autograd's device thread. Each rank has its own data;
  DDP averages the gradients, so every rank's parameters are the same after each step.
- stdout (the same text traced or not, but the ranks' lines interleave in any order):
  `world W backend B devices D0 D1`, per rank and step `rank R step S loss L` (the float32
  loss, exact), `rank R params P` (the parameters after the steps, summed exactly on the
  CPU), and per extension kernel `model NAME launches L grid G block B device D rank R`
  (the launches a probe on every kernel sees; torch's kernels are not in the model).
- REPORTS/rank-R.json: rank, pid, device (CUDA's ordinal) and its name, backend, world,
  the losses, and, when the script runs under `bpf2ptx trace` (BPF2PTX_TRACE_DIR is set),
  what the trace's session folder holds for this process: its `proc-<pid>/` folder's
  files and, from its `events.jsonl` (specs/trace.md, "Interposer"), the kernels
  instrumented, the kernels named as having no PTX, and the fallback reasons. That is an
  observation for the check only (the session folder is gone once trace ends); the
  training step does the same either way.
"""
import json
import math
import os
import socket
import sys
from datetime import timedelta

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_app  # noqa: E402

WORLD = 2
ROWS, COLS = 77, 500  # scale_add on 38,500 elements: 151 blocks, the last one partial
STEPS = 2
ALPHA = 0.5
LR = 0.1
TIMEOUT_S = 120


def say(line):
    """`line` on stdout in one write(2): the ranks share the pipe, and print() makes two
    writes (the text, then the newline) when Python's output is unbuffered
    (PYTHONUNBUFFERED=1), so the ranks' lines could run into each other."""
    os.write(1, (line + "\n").encode())


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session_report(top, pid):
    """What the trace session folder `top` holds for process `pid` (None when `top` is
    None): `proc-<pid>/`'s files and what its events.jsonl says."""
    if not top:
        return None
    d = os.path.join(top, f"proc-{pid}")
    out = {"dir": f"proc-{pid}", "files": sorted(os.listdir(d)) if os.path.isdir(d) else None,
           "instrumented": [], "no_ptx": [], "fallback": [], "kernels": 0}
    try:
        with open(os.path.join(d, "events.jsonl")) as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        kind = e.get("event")
        if kind == "instrumented":
            out["instrumented"] += e.get("kernels", [])
        elif kind == "no_ptx":
            out["no_ptx"] += e.get("kernels", [])
        elif kind == "fallback":
            out["fallback"].append(f"{e.get('label')}: {e.get('reason')}")
        elif kind == "kernel":
            out["kernels"] += 1
    return out


def model_of(torch, ext):
    """The network: its forward uses the extension's two kernels, as autograd
    functions."""
    class ScaleAdd(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, a):
            ctx.a = a
            return ext.scale_add(x.contiguous(), y.contiguous(), a)

        @staticmethod
        def backward(ctx, g):
            g = g.contiguous()
            gx = ext.scale_add(g, torch.zeros_like(g), ctx.a) if ctx.needs_input_grad[0] else None
            gy = g if ctx.needs_input_grad[1] else None
            return gx, gy, None

    class RowSums(torch.autograd.Function):
        @staticmethod
        def forward(ctx, m):
            ctx.cols = m.shape[1]
            return ext.row_sums(m.contiguous())

        @staticmethod
        def backward(ctx, g):
            return g.unsqueeze(1).expand(-1, ctx.cols)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(COLS, COLS)

        def forward(self, x):
            y = ScaleAdd.apply(self.lin(x), x, ALPHA)
            return RowSums.apply(y * y)

    return Net()


def worker(rank, backend, devices, port, ext_dir, reports):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    device = devices[rank]
    torch.cuda.set_device(device)
    dev = torch.device("cuda", device)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=len(devices), timeout=timedelta(seconds=TIMEOUT_S))
    ext = torch_app.extension(ext_dir)
    torch.manual_seed(0)  # the same initial parameters everywhere (DDP broadcasts rank 0's)
    net = model_of(torch, ext).to(dev)
    ddp = DistributedDataParallel(net, device_ids=[device])
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    g = torch.Generator(device=dev).manual_seed(1000 + rank)
    x = torch.randn(ROWS, COLS, device=dev, generator=g)
    losses = []
    for step in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = ddp(x).mean()
        loss.backward()
        opt.step()
        losses.append(repr(loss.item()))
        say(f"rank {rank} step {step} loss {losses[-1]}")
    torch.cuda.synchronize()
    params = math.fsum(v for p in net.parameters()
                       for v in p.detach().cpu().double().reshape(-1).tolist())
    say(f"rank {rank} params {params!r}")
    # Forward: one ext_scale_add and one row_sum a step; backward: one ext_scale_add.
    model = [("ext_scale_add", 2 * STEPS, -(-ROWS * COLS // ext.SCALE_ADD_BLOCK),
              ext.SCALE_ADD_BLOCK),
             ("row_sum", STEPS, ROWS, ext.ROW_SUM_BLOCK)]
    for name, launches, grid, block in model:
        say(f"model {name} launches {launches} grid {grid} block {block} device {device} "
            f"rank {rank}")
    name = torch.cuda.get_device_name(device)
    used = dist.get_backend()
    dist.destroy_process_group()
    report = {"rank": rank, "pid": os.getpid(), "device": device, "device_name": name,
              "backend": used, "world": len(devices), "losses": losses, "params": repr(params),
              "model": [dict(zip(("kernel", "launches", "grid", "block"), m)) for m in model],
              "torch": torch.__version__,
              "session": session_report(os.environ.get("BPF2PTX_TRACE_DIR"), os.getpid())}
    with open(os.path.join(reports, f"rank-{rank}.json"), "w") as f:
        json.dump(report, f)


def run(ext_dir, reports):
    import torch
    import torch.multiprocessing as mp

    os.makedirs(reports, exist_ok=True)
    gpus = torch.cuda.device_count()
    if gpus == 0:
        print("no GPU")
        return 77
    if gpus >= 2:
        backend, devices = "nccl", list(range(WORLD))
    else:
        backend, devices = "gloo", [0] * WORLD
    # NVLink multicast stays off, for the ranks too (they inherit the environment).
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
    if backend == "gloo" and os.path.exists("/sys/class/net/lo"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # both ranks on this host
    setup = {"gpus": gpus, "backend": backend, "devices": devices, "torch": torch.__version__,
             "cuda": torch.version.cuda, "nccl_nvls_enable": os.environ["NCCL_NVLS_ENABLE"]}
    with open(os.path.join(reports, "setup.json"), "w") as f:
        json.dump(setup, f)
    say(f"world {WORLD} backend {backend} devices {' '.join(map(str, devices))}")
    mp.spawn(worker, args=(backend, devices, free_port(), os.path.abspath(ext_dir),
                           os.path.abspath(reports)), nprocs=WORLD, join=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "run":
        sys.exit(__doc__)
    sys.exit(run(sys.argv[2], sys.argv[3]))
