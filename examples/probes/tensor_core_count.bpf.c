// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * tensor_core_count: tensor-core instructions per warp.
 *
 * Instruction attach points (gpu/insn.warp/KERNEL/OPCODE) before every wgmma, mma and
 * wmma instruction, once per warp: these instructions are .aligned, so the warp executes
 * each of them together and the per-warp site runs exactly once per execution. The
 * context's group says which of them multiply (wgmma.fence, .commit_group and
 * .wait_group are synchronisation, and fold away at their sites).
 *
 *   tc_per_warp[global warp id]  tensor-core instructions the warp executed
 *   tc_by_op[op]                 executions per opcode (BPF2PTX_OP_*), all warps
 *
 * The global warp id is the global thread id / 32, which is the hardware's warp when
 * the block size is a multiple of 32 (Triton's: num_warps x 32). Warps past
 * MAX_WARPS are counted in tc_by_op only.
 */
#include "common.h"

#define MAX_WARPS 65536

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_WARPS);
	__type(key, __u32);
	__type(value, __u64);
} tc_per_warp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} tc_by_op SEC(".maps");

static __always_inline int count(struct bpf2ptx_insn_ctx *ctx)
{
	if (ctx->group != BPF2PTX_GROUP_TENSOR_CORE)
		return 0;
	__u32 warp = bpf2ptx_get_global_thread_id() / 32;
	__u32 op = ctx->op & 0xff;
	__u64 *n = bpf_map_lookup_elem(&tc_per_warp, &warp);

	if (n)
		__sync_fetch_and_add(n, 1);
	n = bpf_map_lookup_elem(&tc_by_op, &op);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

SEC("gpu/insn.warp/*/wgmma")
int tc_wgmma(struct bpf2ptx_insn_ctx *ctx)
{
	return count(ctx);
}

SEC("gpu/insn.warp/*/mma")
int tc_mma(struct bpf2ptx_insn_ctx *ctx)
{
	return count(ctx);
}

SEC("gpu/insn.warp/*/wmma")
int tc_wmma(struct bpf2ptx_insn_ctx *ctx)
{
	return count(ctx);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
