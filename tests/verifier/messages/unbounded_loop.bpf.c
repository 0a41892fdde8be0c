// SPDX-License-Identifier: MIT OR Apache-2.0
// Unbounded loop: the bound comes from a map value, so nothing limits the iterations.
// expect: loop-bound; names: `limits`; value: w3 = 0..4294967295; help: bpf_loop
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} limits SEC(".maps");

__u64 spins;

SEC("gpu/entry/*")
int spin(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 zero = 0, i;
	__u32 *n = bpf_map_lookup_elem(&limits, &zero);

	if (!n)
		return 0;
	for (i = 0; i < *n; i++)
		__sync_fetch_and_add(&spins, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
