// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * mem_hist: histogram of a kernel's memory accesses by state space,
 * load/store/atomic and log2 of the access size.
 *
 *   key = space << 5 | kind << 3 | log2(size)
 *
 * space: 0 generic, 1 global, 2 shared, 3 local; kind: 1 load, 2 store,
 * 3 both (atom); log2(size) 0..4 (1 to 16 bytes). Every thread runs it at
 * every ld/st/atom/red.
 */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 128);
	__type(key, __u32);
	__type(value, __u64);
} mem_hist SEC(".maps");

SEC("gpu/mem/*")
int mem_access(struct bpf2ptx_mem_ctx *ctx)
{
	__u32 space = BPF2PTX_MEM_SPACE(ctx->flags) & 3;
	__u32 kind = ctx->flags & (BPF2PTX_MEM_LOAD | BPF2PTX_MEM_STORE);
	__u32 key = space << 5 | kind << 3 | (log2_u64(ctx->size) & 7);
	__u64 *n = bpf_map_lookup_elem(&mem_hist, &key);

	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
