/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The GEMM inner product with bpf_for: an open-coded numeric iterator (the kfuncs
 * bpf_iter_num_new / _next / _destroy) from 0 to K (K from gemm_dims). */
#define BPF_NO_GLOBAL_DATA
#include "gemm.h"
#include "loops.h"

SEC("kretprobe/" VEC_ADD)
int cuda__gemm_bpf_for()
{
	u32 zero = 0, t = gemm_thread();
	u32 *dims = bpf_map_lookup_elem(&gemm_dims, &zero);
	u32 row, col, n, kk;
	s64 acc = 0;
	int k;

	if (!dims || dims[1] == 0 || t >= dims[0] * dims[1])
		return 0;
	n = dims[1];
	kk = dims[2];
	row = t / n;
	col = t % n;
	bpf_for(k, 0, kk)
		acc += gemm_term(row, col, k, n, kk);
	gemm_store(row, col, n, acc);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
