# SPDX-License-Identifier: MIT OR Apache-2.0
"""The Triton part of tests/gpu/corpus.py's real-world PTX corpus (issue 18, "Build" 4):
four kernels in the style of Triton's tutorials, small sizes, each launched once:

  add_kernel      elementwise add (tutorial 01), a masked tail
  softmax_kernel  fused row softmax (tutorial 02, one row per program), a masked row
  matmul_kernel   C = A B with tl.dot (tutorial 03: grouped tile order, K masked), fp16
                  in, fp32 accumulation, fp16 out (wgmma on Hopper)
  attn_fwd        flash-attention forward (tutorial 06, compact: no causal mask, no
                  TMA descriptors), online softmax over K/V blocks, two tl.dot per block

    python3 tests/gpu/trace/corpus_triton.py OUT.npz

Inputs come from a seeded torch.Generator on the GPU, so two runs compute from the same
bits; the outputs are saved as NumPy arrays (OUT.npz) for a bit-for-bit comparison. Run
untraced with TRITON_KERNEL_DUMP=1 / TRITON_DUMP_DIR (the corpus's PTX) and under `bpf2ptx
trace` (whose start-up hook instruments each kernel's PTX before Triton assembles it).
Prints the versions and each kernel's name; exit 3 (with a line saying why) when PyTorch
sees no CUDA device.
"""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m, num_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(tl.float16)
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn, c,
             mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, N_CTX, HEAD_DIM: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # q, k, v, o: (batch x heads, N_CTX, HEAD_DIM), contiguous; N_CTX a multiple of both
    # blocks.
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * N_CTX * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504  # 1 / ln(2): exp2 below
    for start_n in range(0, N_CTX, BLOCK_N):
        kt = tl.load(k_ptr + base + (start_n + offs_n)[None, :] * HEAD_DIM + offs_d[:, None])
        qk = tl.dot(q, kt) * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptr + base + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(tl.float16))


KERNELS = ["add_kernel", "softmax_kernel", "matmul_kernel", "attn_fwd"]


def main(out):
    if not torch.cuda.is_available():
        print(f"PyTorch {torch.__version__} sees no CUDA device", flush=True)
        return 3
    import numpy as np
    print(f"torch {torch.__version__} triton {triton.__version__} "
          f"device {torch.cuda.get_device_name()}", flush=True)
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(18)
    res = {}

    n = 98_432  # tutorial 01's size: 97 blocks of 1024 and a tail
    x = torch.rand(n, device=dev, generator=g)
    y = torch.rand(n, device=dev, generator=g)
    z = torch.empty_like(x)
    add_kernel[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024)
    res["add"] = z

    rows, cols = 823, 781
    s_in = torch.randn(rows, cols, device=dev, generator=g)
    s_out = torch.empty_like(s_in)
    softmax_kernel[(rows,)](s_out, s_in, s_in.stride(0), s_out.stride(0), cols,
                            BLOCK=triton.next_power_of_2(cols), num_warps=4)
    res["softmax"] = s_out

    M, N, K = 512, 384, 320
    a = torch.randn(M, K, device=dev, generator=g).half()
    b = torch.randn(K, N, device=dev, generator=g).half()
    c = torch.empty(M, N, device=dev, dtype=torch.float16)
    bm, bn, bk = 128, 128, 64
    matmul_kernel[(triton.cdiv(M, bm) * triton.cdiv(N, bn),)](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
        c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=4,
        num_stages=3)
    res["matmul"] = c

    bh, ctx, d = 4, 512, 64
    q, k, v = (torch.randn(bh, ctx, d, device=dev, generator=g).half() for _ in range(3))
    o = torch.empty_like(q)
    attn_fwd[(ctx // 128, bh)](q, k, v, o, d ** -0.5, ctx, HEAD_DIM=d, BLOCK_M=128,
                               BLOCK_N=64, num_warps=4, num_stages=3)
    res["attention"] = o
    torch.cuda.synchronize()

    # How far each is from torch's own (informational: the check compares runs).
    ref = {"add": x + y, "softmax": torch.softmax(s_in, dim=1),
           "matmul": (a.float() @ b.float()).half(),
           "attention": torch.softmax((q.float() @ k.float().transpose(1, 2)) * d ** -0.5,
                                      dim=-1) @ v.float()}
    for name, t in res.items():
        diff = (t.float() - ref[name].float()).abs().max().item()
        print(f"{name}: shape {tuple(t.shape)} max |triton - torch| {diff:.3g}", flush=True)
    np.savez(out, **{name: t.cpu().numpy() for name, t in res.items()})
    print("kernels " + " ".join(KERNELS), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
