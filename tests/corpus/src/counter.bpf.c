// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * counter: how many times a CUDA kernel ran, in total and per GPU thread.
 *
 * A GPU user attaches this at kernel entry to check launch counts and to
 * spot threads that run the kernel body more often than their neighbours
 * (e.g. a grid-stride loop with a bad bound). `counters[0]` is one slot
 * shared by every thread (atomic add); `thread_calls` is a per-thread array,
 * so each thread increments its own copy without atomics.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERTHREAD_ARRAY_MAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} thread_calls SEC(".maps");

SEC("kprobe/_Z9vectorAddPKfS0_Pfi")
int count_launch(void *ctx)
{
	__u32 slot = 0;
	__u64 *total, *mine;

	total = bpf_map_lookup_elem(&counters, &slot);
	if (total)
		__sync_fetch_and_add(total, 1);

	mine = bpf_map_lookup_elem(&thread_calls, &slot);
	if (mine)
		*mine += 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
