// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * ring_live: a 64 KiB ring that a million threads each send one 16-byte
 * record {g, t} to, after waiting (globaltimer) 10 us times 1 + (warp % 32),
 * so that the records of a block come in 32 bursts spread over 320 us and
 * the kernel outlasts many ring-fulls. Placed in host memory (`--map
 * events=host`) the host drains it while the kernel runs; with --no-drain it
 * keeps only what fits. Every event is a record or a counted drop
 * (tests/gpu/matrix.py). `seen` counts [0] the threads whose output found
 * the ring's consumer position above 0 (bpf_ringbuf_query): the device sees
 * the host's draining, and [1] the outputs that failed.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 10);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

static __always_inline void add(__u32 k, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&seen, &k);

	if (v)
		__sync_fetch_and_add(v, n);
}

SEC("kprobe/ring_live")
int ring_live(void *ctx)
{
	__u64 r[2];
	__u64 g = bpf2ptx_get_global_thread_id();
	__u64 wait = 10000 * (1 + (g / 32) % 32);
	__u64 t0 = bpf_ktime_get_ns();

	for (int i = 0; i < 10000; i++)
		if (bpf_ktime_get_ns() - t0 > wait)
			break;
	r[0] = g;
	r[1] = bpf_ktime_get_ns() - t0;
	add(0, bpf_ringbuf_query(&events, BPF_RB_CONS_POS) > 0);
	add(1, bpf_ringbuf_output(&events, r, sizeof(r), 0) != 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
