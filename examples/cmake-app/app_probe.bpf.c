// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * app_probe: what the example application's kernels did, per kernel of the
 * instrumented module (k = the kernel's index among its .entry functions):
 *
 *   counts[4k + 0]  launches (block (0,0,0) of each launch)
 *   counts[4k + 1]  blocks
 *   counts[4k + 2]  bytes loaded, every state space
 *   counts[4k + 3]  bytes stored, every state space
 *
 * Every quantity is fixed by the launch configuration and the kernel's code,
 * so tests/gpu/build_integration.sh checks the map against a CPU model of
 * the launches the application reports. The probe only adds, so bpf2ptx
 * shards the map (256 per-SM replicas the host sums; probe_maps.h).
 */
#include "bpf2ptx_helpers.h"

#define MAX_KERNELS 16

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4 * MAX_KERNELS);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

static __always_inline void add(__u32 key, __u64 v)
{
	__u64 *n = bpf_map_lookup_elem(&counts, &key);

	if (n)
		__sync_fetch_and_add(n, v);
}

SEC("gpu/entry.block/*")
int on_block(struct bpf2ptx_kernel_ctx *ctx)
{
	__u64 bx, by, bz;
	__u32 k = ctx->kernel * 4;

	bpf_get_block_idx(&bx, &by, &bz);
	if (!(bx | by | bz))
		add(k, 1);
	add(k + 1, 1);
	return 0;
}

SEC("gpu/mem/*")
int on_access(struct bpf2ptx_mem_ctx *ctx)
{
	__u32 k = ctx->kernel * 4;

	if (ctx->flags & BPF2PTX_MEM_LOAD)
		add(k + 2, ctx->size);
	if (ctx->flags & BPF2PTX_MEM_STORE)
		add(k + 3, ctx->size);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
