// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * warp_counter: count the warps that enter each kernel, written the way a
 * user writes a counter: one array slot, lookup + __sync_fetch_and_add. The
 * `.warp` suffix runs the probe once per warp (the lowest active lane).
 */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} warp_count SEC(".maps");

SEC("gpu/entry.warp/*")
int count_warps(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&warp_count, &zero);

	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
