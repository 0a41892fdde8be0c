// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * One bpf_map_update_elem(BPF_ANY) per thread: key (global thread id % 4096), value
 * key * 3 + 1 (every writer of a key writes the same value, so the result is exact).
 */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} vals SEC(".maps");

SEC("kprobe/hash_update")
int hash_update(void *ctx)
{
	__u64 key = bpf2ptx_get_global_thread_id() % 4096;
	__u64 val = key * 3 + 1;

	bpf_map_update_elem(&vals, &key, &val, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
