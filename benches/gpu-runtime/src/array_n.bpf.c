// SPDX-License-Identifier: MIT OR Apache-2.0
/* One array update per thread: slot (global thread id % 1024) += 1. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} slots SEC(".maps");

SEC("kprobe/array_n")
int array_n(void *ctx)
{
	__u32 key = bpf2ptx_get_global_thread_id() % 1024;
	__u64 *v = bpf_map_lookup_elem(&slots, &key);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
