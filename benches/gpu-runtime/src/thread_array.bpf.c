// SPDX-License-Identifier: MIT OR Apache-2.0
/* One per-thread array (1502) update per thread: own slot += global thread id. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERTHREAD_ARRAY_MAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} mine SEC(".maps");

SEC("kprobe/thread_array")
int thread_array(void *ctx)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&mine, &zero);

	if (v)
		*v += bpf2ptx_get_global_thread_id();
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
