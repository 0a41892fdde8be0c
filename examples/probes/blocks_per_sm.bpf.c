// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * blocks_per_sm: how many blocks of a launch each SM ran. One thread per
 * block (`.block`) adds 1 to sm_blocks[%smid].
 */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} sm_blocks SEC(".maps");

SEC("gpu/entry.block/*")
int block_on_sm(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 sm = (__u32)bpf_get_sm_id();
	__u64 *n = bpf_map_lookup_elem(&sm_blocks, &sm);

	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
