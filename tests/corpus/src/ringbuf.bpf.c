// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * ringbuf: stream kernel entry/exit events to the host through a BPF ring
 * buffer.
 *
 * A GPU user runs this to build a timeline of blocks (e.g. for a trace
 * viewer). Entry copies a stack record with bpf_ringbuf_output; exit
 * reserves space in the buffer, fills it in place, and submits it, or
 * discards it when the block leader check fails.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct block_event {
	__u64 ts_ns;
	__u64 block_x, block_y, block_z;
	__u32 sm;
	__u32 kind; /* 0 = enter, 1 = exit */
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

SEC("kprobe/_Z10layer_normPKfPfii")
int trace_enter(void *ctx)
{
	struct block_event ev = {};
	__u64 x, y, z;

	bpf_get_thread_idx(&x, &y, &z);
	if (x | y | z)
		return 0;
	bpf_get_block_idx(&ev.block_x, &ev.block_y, &ev.block_z);
	ev.sm = (__u32)bpf_get_sm_id();
	ev.kind = 0;
	ev.ts_ns = bpf_get_globaltimer();
	bpf_ringbuf_output(&events, &ev, sizeof(ev), 0);
	return 0;
}

SEC("kretprobe/_Z10layer_normPKfPfii")
int trace_exit(void *ctx)
{
	struct block_event *ev;
	__u64 x, y, z;

	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev)
		return 0;
	bpf_get_thread_idx(&x, &y, &z);
	if (x | y | z) {
		bpf_ringbuf_discard(ev, 0);
		return 0;
	}
	ev->ts_ns = bpf_get_globaltimer();
	bpf_get_block_idx(&ev->block_x, &ev->block_y, &ev->block_z);
	ev->sm = (__u32)bpf_get_sm_id();
	ev->kind = 1;
	bpf_ringbuf_submit(ev, BPF_RB_FORCE_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
