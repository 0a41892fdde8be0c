/* Probes for issue 18's attach points (tests/tests/attach_points.rs): a memory probe that
 * reads every field of struct bpf2ptx_mem_ctx, per thread and per warp, and instruction
 * probes at every granularity, on aligned (wgmma, ldmatrix, bar.sync), predicated
 * (cp.async) and plain instructions. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

static __always_inline void add(__u32 slot, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&seen, &slot);

	if (v)
		__sync_fetch_and_add(v, n);
}

SEC("gpu/mem/*")
int mem_every_field(struct bpf2ptx_mem_ctx *ctx)
{
	__u64 h = ctx->addr ^ ctx->addr2 ^ ctx->policy;

	h += ctx->size + ctx->size2 + ctx->flags + ctx->op + ctx->qual + ctx->count;
	h += ctx->coord[0] + ctx->coord[1] + ctx->coord[2] + ctx->coord[3] + ctx->coord[4];
	h += ctx->kernel + ctx->site + ctx->reserved;
	add(0, h);
	return 0;
}

SEC("gpu/mem.warp/*")
int mem_bytes_per_warp(struct bpf2ptx_mem_ctx *ctx)
{
	if (ctx->flags & (BPF2PTX_MEM_LOAD | BPF2PTX_MEM_STORE))
		add(1, ctx->size);
	if (ctx->flags & (BPF2PTX_MEM_LOAD2 | BPF2PTX_MEM_STORE2))
		add(2, ctx->size2);
	return 0;
}

SEC("gpu/insn.warp/*/wgmma")
int wgmma_per_warp(struct bpf2ptx_insn_ctx *ctx)
{
	if (ctx->op == BPF2PTX_OP_WGMMA_MMA_ASYNC)
		add(3, 1);
	return 0;
}

SEC("gpu/insn/*/mma")
int mma_per_thread(struct bpf2ptx_insn_ctx *ctx)
{
	if (ctx->group == BPF2PTX_GROUP_TENSOR_CORE)
		add(4, 1);
	return 0;
}

SEC("gpu/insn.block/*/bar")
int bar_per_block(struct bpf2ptx_insn_ctx *ctx)
{
	add(5, ctx->site);
	return 0;
}

SEC("gpu/insn.warp/*/cp.async")
int cp_async_per_warp(struct bpf2ptx_insn_ctx *ctx)
{
	add(6 + (ctx->op == BPF2PTX_OP_CP_ASYNC), 1);
	return 0;
}

SEC("gpu/insn/*/ldmatrix")
int ldmatrix_per_thread(struct bpf2ptx_insn_ctx *ctx)
{
	add(8, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
