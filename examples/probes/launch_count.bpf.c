// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * launch_count: how many times each kernel was launched. At kernel entry
 * one thread per block (`.block`) runs the probe; only block (0,0,0)
 * counts, so each launch adds 1 to launches[kernel], kernel being the
 * kernel's index among the instrumented module's .entry functions
 * (`bpf2ptx inject --sites` lists them). -D MAX_KERNELS=N sizes the map.
 */
#include "common.h"

#ifndef MAX_KERNELS
#define MAX_KERNELS 256
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_KERNELS);
	__type(key, __u32);
	__type(value, __u64);
} launches SEC(".maps");

SEC("gpu/entry.block/*")
int count_launch(struct bpf2ptx_kernel_ctx *ctx)
{
	__u64 bx, by, bz;
	__u32 k = ctx->kernel;
	__u64 *n;

	bpf_get_block_idx(&bx, &by, &bz);
	if (bx | by | bz)
		return 0;
	n = bpf_map_lookup_elem(&launches, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
