// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * perf_event: send one sample per warp through a perf event array.
 *
 * A GPU user whose tooling already reads perf buffers (e.g. an existing
 * BCC/libbpf host program) runs this to get warp samples in that format.
 * The record is too large to build comfortably on the stack, so it is
 * assembled in a one-slot per-CPU array used as scratch space.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct warp_sample {
	__u64 ts_ns;
	__u64 sm;
	__u64 hw_warp;
	__u64 block[3];
	__u64 thread[3];
	__u64 grid[3];
	__u64 pad[20];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(max_entries, 64);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct warp_sample);
} scratch SEC(".maps");

SEC("kprobe/_Z9softmax_fwPKfPfi")
int sample_warp(void *ctx)
{
	__u32 zero = 0;
	struct warp_sample *s;

	if (bpf_get_lane_id() != 0)
		return 0;
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	s->ts_ns = bpf_get_globaltimer();
	s->sm = bpf_get_sm_id();
	s->hw_warp = bpf_get_warp_id();
	bpf_get_block_idx(&s->block[0], &s->block[1], &s->block[2]);
	bpf_get_thread_idx(&s->thread[0], &s->thread[1], &s->thread[2]);
	bpf_get_grid_dim(&s->grid[0], &s->grid[1], &s->grid[2]);
	bpf_perf_event_output(ctx, &samples, BPF_F_CURRENT_CPU, s, sizeof(*s));
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
