// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * thread_counter: count the threads that enter each kernel: one array slot,
 * lookup + __sync_fetch_and_add, run by every thread.
 */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} thread_count SEC(".maps");

SEC("gpu/entry/*")
int count_threads(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&thread_count, &zero);

	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
