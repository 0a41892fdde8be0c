/* Counting probes for the injection tests: every attach point and granularity adds to
 * its own slot of one array, so a CPU model of the launch predicts every count.
 *
 *   slot 0  entry, per thread        slot 3  entry, per block
 *   slot 1  exit, per thread         slot 4  exit, per warp
 *   slot 2  entry, per warp          slot 5  exit, per block
 *   slot 8 + 2 * space + store       bytes accessed (space: 0 generic, 1 global,
 *                                    2 shared, 3 local, 4 shared::cluster)
 *   slot 18  memory accesses         slot 19  atomic accesses
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 24);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

static __always_inline void add(__u32 slot, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counts, &slot);

	if (v)
		__sync_fetch_and_add(v, n);
}

SEC("gpu/entry/*")
int on_entry(struct bpf2ptx_kernel_ctx *ctx)
{
	add(0, 1);
	return 0;
}

SEC("gpu/exit/*")
int on_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	add(1, 1);
	return 0;
}

SEC("gpu/entry.warp/*")
int on_entry_warp(struct bpf2ptx_kernel_ctx *ctx)
{
	add(2, 1);
	return 0;
}

SEC("gpu/entry.block/*")
int on_entry_block(struct bpf2ptx_kernel_ctx *ctx)
{
	add(3, 1);
	return 0;
}

SEC("gpu/exit.warp/*")
int on_exit_warp(struct bpf2ptx_kernel_ctx *ctx)
{
	add(4, 1);
	return 0;
}

SEC("gpu/exit.block/*")
int on_exit_block(struct bpf2ptx_kernel_ctx *ctx)
{
	add(5, 1);
	return 0;
}

SEC("gpu/mem/*")
int on_mem(struct bpf2ptx_mem_ctx *ctx)
{
	__u32 f = ctx->flags;
	__u32 space = BPF2PTX_MEM_SPACE(f);

	if (space <= 4)
		add(8 + space * 2 + !!(f & BPF2PTX_MEM_STORE), ctx->size);
	add(18, 1);
	if (f & BPF2PTX_MEM_ATOMIC)
		add(19, 1);
	return 0;
}
