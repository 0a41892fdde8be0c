// SPDX-License-Identifier: MIT OR Apache-2.0
// Ringbuf reservation leak: an early return keeps a reserved record.
// expect: ringbuf-leak; names: `events`; value: line 22; help: bpf_ringbuf_discard
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

struct event {
	__u64 time;
	__u32 sm;
	__u32 lane;
};

SEC("gpu/exit/*")
int trace_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e)
		return 0;
	e->lane = bpf_get_lane_id();
	if (e->lane != 0)
		return 0;
	e->time = bpf_get_globaltimer();
	e->sm = bpf_get_sm_id();
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
