// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * warp_time with its log2 written as the shift-and-compare cascade most published
 * probes use (bpftrace's hist(), libbpf-tools), not bpf2ptx_log2: the backend computes
 * the cascade on a 64-bit difference of times in 32 bits where the verifier proves the
 * upper half zero (tests/tests/fuse.rs, warp_time_log2_is_computed_in_32_bits).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 20);
	__type(key, __u32);
	__type(value, __u64);
} warp_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} warp_hist SEC(".maps");

static __always_inline __u32 log2_cascade(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

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
	__u64 *bucket;
	__u32 b;

	if (!start)
		return 0;
	b = log2_cascade(bpf_get_globaltimer() - *start);
	bucket = bpf_map_lookup_elem(&warp_hist, &b);
	if (bucket)
		__sync_fetch_and_add(bucket, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
