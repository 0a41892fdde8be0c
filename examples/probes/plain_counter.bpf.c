// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * plain_counter: count the threads that enter each kernel the way most published
 * GPU probes write it: one array slot, lookup + a plain `*n = *n + 1`, run by every
 * thread. As written the load-add-store races (such counters counted 63-80 of
 * 1-3 million events); the verifier proves it may be one atomic add
 * (Facts::plain_add), so it compiles like thread_counter's __sync_fetch_and_add:
 * sharded per SM, exact.
 */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} plain_count SEC(".maps");

SEC("gpu/entry/*")
int count_threads_plain(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&plain_count, &zero);

	if (n)
		*n = *n + 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
