// SPDX-License-Identifier: MIT OR Apache-2.0
/* Refused: a host-side program that updates a hash map (the device runtime's hash
 * protocol does not run on the CPU). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} per_kernel SEC(".maps");

SEC("host/launch/*")
int count(struct bpf2ptx_launch_ctx *ctx)
{
	__u32 k = ctx->kernel;
	__u64 one = 1;

	bpf_map_update_elem(&per_kernel, &k, &one, BPF_ANY);
	return 0;
}

SEC("gpu/entry/*")
int entry(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&per_kernel, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
