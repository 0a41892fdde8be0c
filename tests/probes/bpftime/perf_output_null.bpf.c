/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* bpf_perf_event_output with a NULL context into a GPU ringbuf (1527), as bpftime's
 * kernelretsnoop and kernel_trace examples write their events: bpftime's device body of
 * helper 25 ignores the context and appends to the calling thread's ring. */
#define BPF_NO_GLOBAL_DATA
#include "bpftime_gpu.h"

struct exit_event {
	u64 tx, ty, tz;
	u64 bx;
	u64 at;
};

struct {
	__uint(type, BPF_MAP_TYPE_GPU_RINGBUF_MAP);
	__uint(max_entries, 16);
	__type(key, u32);
	__type(value, struct exit_event);
} exits SEC(".maps");

SEC("kretprobe/" VEC_ADD)
int cuda__exit_event()
{
	struct exit_event ev;
	u64 by, bz;

	bpf_get_thread_idx(&ev.tx, &ev.ty, &ev.tz);
	bpf_get_block_idx(&ev.bx, &by, &bz);
	ev.at = bpf_get_globaltimer();
	bpf_perf_event_output(NULL, &exits, 0, &ev, sizeof(ev));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
