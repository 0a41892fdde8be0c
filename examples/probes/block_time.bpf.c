// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * block_time: log2 histogram of how long each block runs, in nanoseconds:
 * from its entry (thread 0 stores %globaltimer in block_start[block]) to
 * the exit of its last thread. At every exit one lane per warp adds the
 * number of lanes leaving there with it to block_done[block]; the warp
 * that brings the count to the block's size adds 1 to
 * block_hist[log2(now - start)] and clears the count for the next launch.
 * Counting lanes, not warps, keeps it exact when a warp's lanes leave at
 * different exits.
 */
#include "common.h"

#define MAX_BLOCKS (1 << 17)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_BLOCKS);
	__type(key, __u32);
	__type(value, __u64);
} block_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_BLOCKS);
	__type(key, __u32);
	__type(value, __u64);
} block_done SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} block_hist SEC(".maps");

SEC("gpu/entry.block/*")
int block_enter(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 b = block_linear();
	__u64 *start = bpf_map_lookup_elem(&block_start, &b);

	if (start)
		*start = bpf_get_globaltimer();
	return 0;
}

SEC("gpu/exit.warp/*")
int block_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 b = block_linear(), slot;
	__u64 lanes = popcount32((__u32)bpf2ptx_get_active_mask());
	__u64 dx, dy, dz, before, *start, *done, *bucket;

	bpf_get_block_dim(&dx, &dy, &dz);
	start = bpf_map_lookup_elem(&block_start, &b);
	done = bpf_map_lookup_elem(&block_done, &b);
	if (!start || !done)
		return 0;
	before = __sync_fetch_and_add(done, lanes);
	if (before + lanes != dx * dy * dz)
		return 0;
	*done = 0;
	slot = log2_u64(bpf_get_globaltimer() - *start);
	bucket = bpf_map_lookup_elem(&block_hist, &slot);
	if (bucket)
		__sync_fetch_and_add(bucket, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
