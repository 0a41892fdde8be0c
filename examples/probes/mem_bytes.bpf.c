// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * mem_bytes: bytes each kernel loads and stores, in every state space.
 * Every thread runs it before every ld/st/atom/red:
 * kernel_bytes[2 * kernel] += size for a read, kernel_bytes[2 * kernel + 1]
 * += size for a write (an atomic is both), kernel being the kernel's index
 * among the module's .entry functions. -D MAX_KERNELS=N sizes the map.
 */
#include "common.h"

#ifndef MAX_KERNELS
#define MAX_KERNELS 256
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2 * MAX_KERNELS);
	__type(key, __u32);
	__type(value, __u64);
} kernel_bytes SEC(".maps");

SEC("gpu/mem/*")
int count_bytes(struct bpf2ptx_mem_ctx *ctx)
{
	__u32 key = ctx->kernel * 2;
	__u64 *n;

	if (ctx->flags & BPF2PTX_MEM_LOAD) {
		n = bpf_map_lookup_elem(&kernel_bytes, &key);
		if (n)
			__sync_fetch_and_add(n, ctx->size);
	}
	if (ctx->flags & BPF2PTX_MEM_STORE) {
		key += 1;
		n = bpf_map_lookup_elem(&kernel_bytes, &key);
		if (n)
			__sync_fetch_and_add(n, ctx->size);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
