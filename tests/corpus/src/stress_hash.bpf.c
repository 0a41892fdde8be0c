// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * stress_hash: every thread of a launch counts itself under key (global thread id % 4096)
 * of a hash map: the first thread of a key inserts it (BPF_NOEXIST; losers of the race get
 * -EEXIST), then every thread adds 1 with an atomic. On a million threads each of the 4096
 * keys must count exactly threads / 4096, and no key may appear twice.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} counts SEC(".maps");

SEC("kprobe/stress_hash")
int stress_hash(void *ctx)
{
	__u64 tx, ty, tz, bx, by, bz, dx, dy, dz, zero = 0;

	bpf_get_thread_idx(&tx, &ty, &tz);
	bpf_get_block_idx(&bx, &by, &bz);
	bpf_get_block_dim(&dx, &dy, &dz);
	__u64 key = (bx * dx + tx) % 4096;
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
