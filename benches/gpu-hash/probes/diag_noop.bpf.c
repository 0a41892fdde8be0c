// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Diagnostic (benches/gpu-hash/diag_warp.py): as diag_warp.bpf.c, but the entry probe
 * only counts (no map update), to tell whether the hash update splits the warp.
 */
#include "common.h"

U32_U64_MAP(lanes_in, BPF_MAP_TYPE_ARRAY, 33);
U32_U64_MAP(lanes_out, BPF_MAP_TYPE_ARRAY, 33);

static __always_inline __u32 popc32(__u32 v)
{
	v = v - ((v >> 1) & 0x55555555);
	v = (v & 0x33333333) + ((v >> 2) & 0x33333333);
	return (((v + (v >> 4)) & 0x0F0F0F0F) * 0x01010101) >> 24;
}

static __always_inline void count(void *map)
{
	__u32 n = popc32((__u32)bpf2ptx_get_active_mask());
	__u64 *slot = bpf_map_lookup_elem(map, &n);

	if (slot)
		__sync_fetch_and_add(slot, 1);
}

SEC("gpu/entry.warp/*")
int diag_enter(struct bpf2ptx_kernel_ctx *ctx)
{
	count(&lanes_in);
	return 0;
}

SEC("gpu/exit.warp/*")
int diag_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	count(&lanes_out);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
