// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * gpu_maps: host-controlled event stream with bpftime's GPU map types.
 *
 * A GPU user runs this to stream per-thread exit records to the host
 * through a GPU ring buffer (type 1527, written with bpf_perf_event_output)
 * while a host-visible GPU array (type 1503) holds a control block: a kill
 * switch the host can flip to stop a runaway kernel (bpf_gpu_exit), a
 * ticket counter, and the first block that finished. The control updates
 * use atomics whose results are used (fetch-add, cmpxchg, xchg, fetch-or),
 * which need -mcpu=v3.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct control {
	__u64 kill;		/* host sets 1 to stop the kernel */
	__u64 tickets;		/* records handed out */
	__u64 first_block;	/* ~0 until a block finishes */
	__u64 last_ts;
	__u32 seen_sms;		/* bit i: SM i (mod 32) reported */
	__u32 dropped;
};

struct exit_record {
	__u64 ticket;
	__u64 ts_ns;
	__u64 block[3];
	__u64 thread[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct control);
} control SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_GPU_RINGBUF_MAP);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct exit_record);
} exits SEC(".maps");

SEC("kprobe/_Z12flash_attn_fwPK6__halfS1_S1_PS_i")
int kill_switch(void *ctx)
{
	__u32 zero = 0;
	struct control *c = bpf_map_lookup_elem(&control, &zero);

	if (c && c->kill)
		bpf_gpu_exit();
	return 0;
}

SEC("kretprobe/_Z12flash_attn_fwPK6__halfS1_S1_PS_i")
int stream_exit(void *ctx)
{
	__u32 zero = 0, bit;
	struct control *c;
	struct exit_record r = {};
	__u64 ts, prev;

	c = bpf_map_lookup_elem(&control, &zero);
	if (!c)
		return 0;
	ts = bpf_get_globaltimer();
	r.ticket = __sync_fetch_and_add(&c->tickets, 1);
	r.ts_ns = ts;
	bpf_get_block_idx(&r.block[0], &r.block[1], &r.block[2]);
	bpf_get_thread_idx(&r.thread[0], &r.thread[1], &r.thread[2]);

	__sync_val_compare_and_swap(&c->first_block, ~0ULL, r.block[0]);
	prev = __sync_lock_test_and_set(&c->last_ts, ts);
	bit = 1U << (bpf_get_sm_id() & 31);
	if (!(__sync_fetch_and_or(&c->seen_sms, bit) & bit))
		bpf_gpu_membar();

	if (prev > ts || bpf_perf_event_output(ctx, &exits, 0, &r, sizeof(r)))
		__sync_fetch_and_add(&c->dropped, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
