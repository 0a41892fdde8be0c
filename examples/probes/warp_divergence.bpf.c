// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * warp_divergence: how many lanes of a warp are active together at kernel
 * entry and at each exit. One lane per warp (`.warp`) adds 1 to
 * entry_lanes[n] or exit_lanes[n], n = active lanes (1..32). A full warp
 * that enters together and leaves at different returns shows up as several
 * partial counts in exit_lanes; a launch whose block size is not a
 * multiple of 32 shows partial warps in both.
 */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 33);
	__type(key, __u32);
	__type(value, __u64);
} entry_lanes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 33);
	__type(key, __u32);
	__type(value, __u64);
} exit_lanes SEC(".maps");

SEC("gpu/entry.warp/*")
int lanes_at_entry(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 n = popcount32((__u32)bpf2ptx_get_active_mask());
	__u64 *c = bpf_map_lookup_elem(&entry_lanes, &n);

	if (c)
		__sync_fetch_and_add(c, 1);
	return 0;
}

SEC("gpu/exit.warp/*")
int lanes_at_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 n = popcount32((__u32)bpf2ptx_get_active_mask());
	__u64 *c = bpf_map_lookup_elem(&exit_lanes, &n);

	if (c)
		__sync_fetch_and_add(c, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
