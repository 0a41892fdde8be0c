// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * One hash update per thread: key (global thread id % 4096); insert the key if absent
 * (BPF_NOEXIST), then add 1 to its value. After the first launch every key is present,
 * so a launch measures lookup + atomic add.
 */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} counts SEC(".maps");

SEC("kprobe/hash_add")
int hash_add(void *ctx)
{
	__u64 key = bpf2ptx_get_global_thread_id() % 4096, zero = 0;
	__u64 *v = bpf_map_lookup_elem(&counts, &key);

	if (!v) {
		bpf_map_update_elem(&counts, &key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&counts, &key);
	}
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
