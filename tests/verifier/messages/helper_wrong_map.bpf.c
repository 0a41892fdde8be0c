// SPDX-License-Identifier: MIT OR Apache-2.0
// Helper argument of the wrong type: bpf_ringbuf_output needs a ringbuf map, and
// `times` is an array.
// expect: helper-arg; names: `times`; value: the map `times` (array); help: takes ringbuf, gpu_ringbuf maps
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} times SEC(".maps");

SEC("gpu/exit/*")
int stamp(struct bpf2ptx_kernel_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer();

	bpf_ringbuf_output(&times, &now, sizeof(now), 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
