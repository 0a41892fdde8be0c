/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The GEMM inner product as a plain loop to K (K from gemm_dims) with nothing that bounds
 * it: the verifier rejects it (loop-bound) unless it is compiled with `--loop-budget N`,
 * which ends a run whose loop would go past N iterations, and counts it
 * (bpf2ptx_loopcnt_cuda__gemm_budget, specs/abi.md). */
#define BPF_NO_GLOBAL_DATA
#include "gemm.h"

SEC("kretprobe/" VEC_ADD)
int cuda__gemm_budget()
{
	u32 zero = 0, t = gemm_thread();
	u32 *dims = bpf_map_lookup_elem(&gemm_dims, &zero);
	u32 row, col, n, kk, k;
	s64 acc = 0;

	if (!dims || dims[1] == 0 || t >= dims[0] * dims[1])
		return 0;
	n = dims[1];
	kk = dims[2];
	row = t / n;
	col = t % n;
	for (k = 0; k < kk; k++)
		acc += gemm_term(row, col, k, n, kk);
	gemm_store(row, col, n, acc);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
