// SPDX-License-Identifier: MIT OR Apache-2.0
/* Refused: a host-side program that calls a GPU helper (bpf_get_globaltimer, 502);
 * bpf_ktime_get_ns is the host's clock on the same timeline. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} t SEC(".maps");

SEC("host/launch/*")
int stamp(struct bpf2ptx_launch_ctx *ctx)
{
	__u32 k = 0;
	__u64 now = bpf_get_globaltimer();

	bpf_map_update_elem(&t, &k, &now, BPF_ANY);
	return 0;
}

SEC("gpu/entry/*")
int entry(struct bpf2ptx_kernel_ctx *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
