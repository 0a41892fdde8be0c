/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The GEMM inner product with bpf_loop (181): the helper calls the callback K times
 * (K from gemm_dims); the callback's context carries the row, column and sum. */
#define BPF_NO_GLOBAL_DATA
#include "gemm.h"

struct dot {
	u32 row, col, n, kk;
	s64 acc;
};

static long dot_step(u32 k, struct dot *d)
{
	d->acc += gemm_term(d->row, d->col, k, d->n, d->kk);
	return 0;
}

SEC("kretprobe/" VEC_ADD)
int cuda__gemm_bpf_loop()
{
	u32 zero = 0, t = gemm_thread();
	u32 *dims = bpf_map_lookup_elem(&gemm_dims, &zero);
	struct dot d = {};

	if (!dims || dims[1] == 0 || t >= dims[0] * dims[1])
		return 0;
	d.row = t / dims[1];
	d.col = t % dims[1];
	d.n = dims[1];
	d.kk = dims[2];
	bpf_loop(d.kk, dot_step, &d, 0);
	gemm_store(d.row, d.col, d.n, d.acc);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
