// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * rt_rings: every thread of a launch sends one 16-byte record {g, tag} to a
 * ringbuf (27) and to a GPU ringbuf (1527); lane 0 of every warp sends one
 * to a perf event array (4). tests/gpu/matrix.py checks that every event is a
 * record or a counted drop, that no thread's record appears twice, and that
 * `fails` (outputs that returned an error, per ring) equals each ring's drops.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct rec {
	__u64 g;
	__u64 tag;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 32 << 20);
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_GPU_RINGBUF_MAP);
	__uint(max_entries, 32 << 20);
} grb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(max_entries, 256);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} perf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} fails SEC(".maps");

static __always_inline void fail(__u32 k)
{
	__u64 *v = bpf_map_lookup_elem(&fails, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("kprobe/rt_rings")
int rt_rings(void *ctx)
{
	struct rec r = { .g = bpf2ptx_get_global_thread_id(), .tag = 27 };

	if (bpf_ringbuf_output(&rb, &r, sizeof(r), 0))
		fail(0);
	r.tag = 1527;
	if (bpf_ringbuf_output(&grb, &r, sizeof(r), 0))
		fail(1);
	if (bpf_get_lane_id() == 0) {
		r.tag = 4;
		if (bpf_perf_event_output(ctx, &perf, BPF_F_CURRENT_CPU, &r, sizeof(r)))
			fail(2);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
