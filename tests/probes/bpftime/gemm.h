/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The maps of the GEMM-style probes: C (M x N) = A (M x K) * B (K x N), s32 elements,
 * the dimensions {M, N, K} in gemm_dims[0], every matrix in a GPU array (1503), as in
 * bpftime's directly_run_on_gpu example. The trip count K comes from a map, so the
 * verifier cannot bound the inner loop by its own analysis: each probe bounds it another
 * way (bpf_loop, an open-coded iterator, may_goto). Thread t of the launch computes
 * element t of C. */
#ifndef BPFTIME_GEMM_H
#define BPFTIME_GEMM_H
#include "bpftime_gpu.h"

#define GEMM_CELLS 4096

struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32[3]);
} gemm_dims SEC(".maps");

#define GEMM_MATRIX(name)                               \
	struct {                                        \
		__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP); \
		__uint(max_entries, GEMM_CELLS);        \
		__type(key, u32);                       \
		__type(value, s32);                     \
	} name SEC(".maps")

GEMM_MATRIX(gemm_a);
GEMM_MATRIX(gemm_b);
GEMM_MATRIX(gemm_c);

/* The calling thread's linear index in the launch (x dimension only, as vectorAdd). */
static __always_inline u32 gemm_thread(void)
{
	u64 bx, by, bz, dx, dy, dz, tx, ty, tz;

	bpf_get_block_idx(&bx, &by, &bz);
	bpf_get_block_dim(&dx, &dy, &dz);
	bpf_get_thread_idx(&tx, &ty, &tz);
	return (u32)(bx * dx + tx);
}

/* A[row][k] * B[k][col], 0 for an index past the arrays. */
static __always_inline s64 gemm_term(u32 row, u32 col, u32 k, u32 n, u32 kk)
{
	u32 ia = row * kk + k, ib = k * n + col;
	s32 *a = bpf_map_lookup_elem(&gemm_a, &ia);
	s32 *b = bpf_map_lookup_elem(&gemm_b, &ib);

	if (!a || !b)
		return 0;
	return (s64)*a * (s64)*b;
}

static __always_inline void gemm_store(u32 row, u32 col, u32 n, s64 acc)
{
	u32 ic = row * n + col;
	s32 out = (s32)acc;

	bpf_map_update_elem(&gemm_c, &ic, &out, BPF_ANY);
}
#endif
