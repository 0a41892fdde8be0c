// SPDX-License-Identifier: MIT OR Apache-2.0
// Off-by-one index into an array member of a map value: the message names the member
// and the map, and counts the member's entries.
// expect: mem-bounds; names: `slots` in a value of `hist`; value: index may be 0..16; help: `<` instead of `<=`
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct hist_value {
	__u64 total;
	__u64 slots[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hist_value);
} hist SEC(".maps");

SEC("gpu/exit/*")
int lane_hist(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 zero = 0, lane = bpf_get_lane_id() & 31;
	struct hist_value *v = bpf_map_lookup_elem(&hist, &zero);

	if (!v)
		return 0;
	v->total += 1;
	if (lane <= 16)
		v->slots[lane] += 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
