// SPDX-License-Identifier: MIT OR Apache-2.0
/* Refused by the verifier: a host-side program that reads past its 64-byte context. */
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
int past_end(struct bpf2ptx_launch_ctx *ctx)
{
	__u32 k = 0;
	__u64 v = *(volatile __u64 *)((char *)ctx + 64);

	bpf_map_update_elem(&t, &k, &v, BPF_ANY);
	return 0;
}

SEC("gpu/entry/*")
int entry(struct bpf2ptx_kernel_ctx *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
