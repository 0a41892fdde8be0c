// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * mem_traffic: every byte a kernel's data-moving instructions move, by instruction, side
 * and state space (specs/abi.md, "Memory contexts").
 *
 *   key = op << 4 | side << 3 | space     (op: BPF2PTX_OP_*, below 256)
 *
 * side 0: the bytes at addr (size, for sites that load or store there); side 1: the
 * bytes at addr2 (size2, a copy's destination or a tensor store's source); space: of
 * that address (0 generic, 1 global, 2 shared, 3 local, 4 shared::cluster). An
 * mbarrier's transaction bytes (what the tensor copies completing on it deliver) go to
 * key op << 4 | 15. Every thread runs it at every site; the two maps count bytes and
 * accesses (traffic_bytes, traffic_count).
 */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} traffic_bytes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} traffic_count SEC(".maps");

static __always_inline void add(__u32 key, __u64 bytes)
{
	__u64 *v = bpf_map_lookup_elem(&traffic_bytes, &key);

	if (v)
		__sync_fetch_and_add(v, bytes);
	v = bpf_map_lookup_elem(&traffic_count, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("gpu/mem/*")
int mem_traffic(struct bpf2ptx_mem_ctx *ctx)
{
	__u32 op = (ctx->op & 0xff) << 4;
	__u32 f = ctx->flags;

	if (f & (BPF2PTX_MEM_LOAD | BPF2PTX_MEM_STORE))
		add(op | (BPF2PTX_MEM_SPACE(f) & 7), ctx->size);
	if (f & (BPF2PTX_MEM_LOAD2 | BPF2PTX_MEM_STORE2))
		add(op | 8 | (BPF2PTX_MEM_SPACE2(f) & 7), ctx->size2);
	if (ctx->op == BPF2PTX_OP_MBARRIER && ctx->size2)
		add(op | 15, ctx->size2);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
