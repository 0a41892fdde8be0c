// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * warp_time: log2 histogram of how long each warp stays in a kernel.
 *
 * At entry one lane per warp stores %globaltimer in warp_start[global warp
 * id]; at exit one lane per warp adds 1 to warp_hist[log2(now - start)]
 * (nanoseconds). Keying by the global warp id (not by the lane) means the
 * entry and exit leaders need not be the same lane.
 */
#include "common.h"

#define MAX_WARPS (1 << 20)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_WARPS);
	__type(key, __u32);
	__type(value, __u64);
} warp_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} warp_hist SEC(".maps");

SEC("gpu/entry.warp/*")
int warp_enter(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 w = (__u32)(bpf2ptx_get_global_thread_id() >> 5);
	__u64 *start = bpf_map_lookup_elem(&warp_start, &w);

	if (start)
		*start = bpf_get_globaltimer();
	return 0;
}

SEC("gpu/exit.warp/*")
int warp_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 w = (__u32)(bpf2ptx_get_global_thread_id() >> 5);
	__u64 *start = bpf_map_lookup_elem(&warp_start, &w);
	__u64 *bucket, now;
	__u32 b;

	if (!start)
		return 0;
	now = bpf_get_globaltimer();
	b = log2_u64(now - *start);
	bucket = bpf_map_lookup_elem(&warp_hist, &b);
	if (bucket)
		__sync_fetch_and_add(bucket, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
