// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Diagnostic for churn per warp (benches/gpu-hash/diag_warp.py): the churn_warp probe with
 * the number of lanes each warp-granularity run stands for (popcount of get_active_mask)
 * counted at entry (lanes_in[n]) and at exit (lanes_out[n]). A warp that reaches the exit
 * in one piece adds 1 to lanes_out[32]; one that reaches it split runs the exit probe once
 * per piece.
 */
#include "common.h"

U32_U64_MAP(start, BPF_MAP_TYPE_HASH, 65536);
U32_U64_MAP(lanes_in, BPF_MAP_TYPE_ARRAY, 33);
U32_U64_MAP(lanes_out, BPF_MAP_TYPE_ARRAY, 33);
U32_U64_MAP(missed, BPF_MAP_TYPE_ARRAY, 1);

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
	__u32 key = (__u32)(bpf2ptx_get_global_thread_id() >> 5);
	__u64 now = bpf_ktime_get_ns();

	count(&lanes_in);
	bpf_map_update_elem(&start, &key, &now, BPF_ANY);
	return 0;
}

SEC("gpu/exit.warp/*")
int diag_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 key = (__u32)(bpf2ptx_get_global_thread_id() >> 5), zero = 0;
	__u64 *v;

	count(&lanes_out);
	v = bpf_map_lookup_elem(&start, &key);
	if (v) {
		bpf_map_delete_elem(&start, &key);
	} else {
		v = bpf_map_lookup_elem(&missed, &zero);
		if (v)
			__sync_fetch_and_add(v, 1);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
