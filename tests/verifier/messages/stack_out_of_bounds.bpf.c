// SPDX-License-Identifier: MIT OR Apache-2.0
// Stack out of bounds: an index into a stack array that may run past the frame.
// expect: mem-bounds; names: the stack frame; value: r10-256..r10+248; help: bound the index below 32
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} last SEC(".maps");

SEC("gpu/entry/*")
int lanes(struct bpf2ptx_kernel_ctx *ctx)
{
	volatile __u64 seen[32] = {};
	__u32 lane = bpf_get_lane_id() & 63;
	__u32 zero = 0;
	__u64 *v;

	seen[lane] = 1;
	v = bpf_map_lookup_elem(&last, &zero);
	if (v)
		*v = seen[0];
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
