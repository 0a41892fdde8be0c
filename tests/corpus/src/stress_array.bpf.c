// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * stress_array: every thread of a launch adds 1 to slot (global thread id % 16) of an
 * array map and records its global id in a per-thread array. The GPU map test runs it on
 * a million threads: each slot must count exactly threads / 16, and every thread's
 * per-thread slot must hold its own id.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERTHREAD_ARRAY_MAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} mine SEC(".maps");

static __always_inline __u64 global_id(void)
{
	__u64 tx, ty, tz, bx, by, bz, dx, dy, dz;

	bpf_get_thread_idx(&tx, &ty, &tz);
	bpf_get_block_idx(&bx, &by, &bz);
	bpf_get_block_dim(&dx, &dy, &dz);
	return bx * dx + tx;
}

SEC("kprobe/stress_array")
int stress_array(void *ctx)
{
	__u64 id = global_id();
	__u32 key = id % 16, zero = 0;
	__u64 *v = bpf_map_lookup_elem(&slots, &key);

	if (v)
		__sync_fetch_and_add(v, 1);
	v = bpf_map_lookup_elem(&mine, &zero);
	if (v)
		*v = id;
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
