// SPDX-License-Identifier: MIT OR Apache-2.0
// Unchecked lookup: bpf_map_lookup_elem returns NULL for a key the map does not hold.
// expect: null-deref; names: `warp_hist`; value: a value of `warp_hist`, or NULL; help: check the pointer against NULL first
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} warp_hist SEC(".maps");

SEC("gpu/exit/*")
int count_warps(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 w = bpf_get_warp_id();
	__u64 *n = bpf_map_lookup_elem(&warp_hist, &w);

	*n += 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
