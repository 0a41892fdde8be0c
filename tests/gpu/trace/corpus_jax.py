# SPDX-License-Identifier: MIT OR Apache-2.0
"""The XLA part of tests/gpu/corpus.py's real-world PTX corpus (issue 18, "Build" 4): a few
jitted JAX functions whose fusions XLA compiles to PTX itself (LLVM's NVPTX backend), on
small inputs from jax.random (whose Threefry kernels are PTX too):

  norm_softmax       layer norm, softmax and argmax over rows (row reductions, shuffles)
  transpose_cumsum   a transposed, scaled copy and a cumulative sum along rows
  histogram          an int32 scatter-add (atomics; integer, so the order is moot)
  sort_rows          jnp.sort of 64 rows (XLA's own sort kernel)
  mlp                gelu(x @ w1) @ w2 (a GEMM: cuBLAS or XLA's Triton fusion, and the
                     elementwise fusions around it)

    python3 tests/gpu/trace/corpus_jax.py OUT.npz

Every input and output is saved (OUT.npz) for a bit-for-bit comparison of two runs: one
with `XLA_FLAGS=--xla_dump_to=DIR` and tests/gpu/trace/xla_ptxas_wrapper.py as ptxas (the
corpus's PTX), one with the instrumented PTX fed back through `--xla_gpu_ptx_file=FILE` or
given to ptxas by the wrapper in place of XLA's (tests/gpu/corpus.py). Exit 3 (with a line
saying why) when JAX has no GPU backend.
"""
import sys


def main(out):
    import jax
    import jax.numpy as jnp
    import numpy as np
    if jax.default_backend() != "gpu":
        print(f"JAX {jax.__version__} has no GPU backend (default backend "
              f"{jax.default_backend()})", flush=True)
        return 3
    import jaxlib
    print(f"jax {jax.__version__} jaxlib {jaxlib.__version__} device {jax.devices()[0]}",
          flush=True)
    k = jax.random.split(jax.random.PRNGKey(18), 6)
    x = jax.random.normal(k[0], (512, 1000), jnp.float32)
    g = jax.random.normal(k[1], (1000,), jnp.float32)
    b = jax.random.normal(k[2], (1000,), jnp.float32)
    w1 = jax.random.normal(k[3], (1000, 256), jnp.float32) * 0.05
    w2 = jax.random.normal(k[4], (256, 128), jnp.float32) * 0.05
    idx = jax.random.randint(k[5], (100_003,), 0, 4096)

    @jax.jit
    def norm_softmax(x, g, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        y = (x - mu) * jax.lax.rsqrt(var + 1e-5) * g + b
        return jax.nn.softmax(y, axis=-1), jnp.argmax(y, axis=-1)

    @jax.jit
    def transpose_cumsum(x):
        return jnp.cumsum(x.T * 2.0 + 1.0, axis=1)

    @jax.jit
    def histogram(idx):
        return jnp.zeros(4096, jnp.int32).at[idx].add(1)

    @jax.jit
    def sort_rows(x):
        return jnp.sort(x[:64], axis=-1)

    @jax.jit
    def mlp(x, w1, w2):
        return jax.nn.gelu(x @ w1) @ w2

    sm, am = norm_softmax(x, g, b)
    res = {"x": x, "idx": idx, "w1": w1, "softmax": sm, "argmax": am,
           "cumsum": transpose_cumsum(x), "histogram": histogram(idx), "sort": sort_rows(x),
           "mlp": mlp(x, w1, w2)}
    res = {name: np.asarray(v) for name, v in res.items()}
    print(f"histogram total {int(res['histogram'].sum())} (want {idx.shape[0]}); sorted rows "
          f"{bool((np.diff(res['sort'], axis=-1) >= 0).all())}", flush=True)
    np.savez(out, **res)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
