// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The parts of examples/probes/trace_latency.bpf.c, one more per variant, to find
 * which one delays the application's first instruction in a block
 * (benches/gpu-trace/latency_parts.py). PART (clang -DPART=N):
 *   0  an empty block-entry probe, with the host program (the interposer's own cost);
 *   1  the entry probe reads the host-placed `launch` map and counts the block;
 *   2  1, and the launch span (bpf2ptx_launch_span_start on an LRU hash map);
 *   3  2 with `spans` a plain hash map;
 *   4  1, and only the span's update (BPF_NOEXIST, every block the same key);
 *   5  1, and only a lookup of the span (it is never inserted: every lookup misses);
 *   6  2 with a key of each block's own (the launch time plus the global thread id
 *      / 256): no crowd on one key (before session 17; since then
 *      bpf2ptx_launch_span_start inserts from block 0 only, so the other blocks'
 *      keys are never inserted and they only look up);
 *   7  1, and a lookup of the span that never runs (behind a test of the time that
 *      is never true): the hash map is in the module and bound, not used.
 *   8  1, and a read of `launch`'s host time (the value the host program wrote, in
 *      mapped host memory) with no hash map at all: is it the read of host memory that
 *      every hash variant above also makes (its key) that costs?
 *   9  the probe times its own parts with %globaltimer into histograms of 1.024 us
 *      buckets, the last 63+ (arrays `t_read`, `t_lookup`, `t_whole`): reading the host time, a span lookup
 *      that misses, and the whole probe; printed by `bpf2ptx trace` at exit. (A branch on
 *      the key ends `t_read`: the stamp after it waits for the load.)
 *  10  9 with the lookup's key a constant (no read of `launch` before it): is it the
 *      table's memory or the pushed word that the lookup waits for?
 */
#include "../../../examples/probes/common.h"

#ifndef PART
#define PART 0
#endif

struct launch_info {
	__u64 host_ns;
	__u64 seq;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct launch_info);
} launch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} blocks SEC(".maps");

struct {
#if PART == 3
	__uint(type, BPF_MAP_TYPE_HASH);
#else
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
#endif
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct bpf2ptx_launch_span);
} spans SEC(".maps");

#if PART >= 9
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} t_read SEC(".maps"), t_lookup SEC(".maps"), t_whole SEC(".maps");

static __always_inline void hist(void *map, __u64 d)
{
	__u32 k = d >> 10 > 63 ? 63 : (__u32)(d >> 10);
	__u64 *c = bpf_map_lookup_elem(map, &k);

	if (c)
		__sync_fetch_and_add(c, 1);
}
#endif

SEC("host/launch/*")
int on_launch(struct bpf2ptx_launch_ctx *ctx)
{
	__u32 zero = 0;
	struct launch_info *l = bpf_map_lookup_elem(&launch, &zero);

	if (l) {
		l->host_ns = ctx->host_ns;
		l->seq = ctx->seq;
	}
	return 0;
}

SEC("gpu/entry.block/*")
int block_start(struct bpf2ptx_kernel_ctx *ctx)
{
#if PART >= 1
	__u64 now = bpf_get_globaltimer(), *c;
	__u32 zero = 0;
	struct launch_info *l = bpf_map_lookup_elem(&launch, &zero);

	if (!l)
		return 0;
	c = bpf_map_lookup_elem(&blocks, &zero);
	if (c)
		__sync_fetch_and_add(c, 1);
#if PART == 2 || PART == 3
	bpf2ptx_launch_span_start(&spans, l->host_ns, now);
#elif PART == 6
	bpf2ptx_launch_span_start(&spans, l->host_ns + (bpf2ptx_get_global_thread_id() >> 8), now);
#elif PART == 4
	struct bpf2ptx_launch_span init = { now, now };
	__u64 key = l->host_ns;
	bpf_map_update_elem(&spans, &key, &init, BPF_NOEXIST);
#elif PART == 7
	__u64 key = l->host_ns;
	if (c && now == 1 && bpf_map_lookup_elem(&spans, &key))
		__sync_fetch_and_add(c, 1);
#elif PART >= 9
	__u64 t1, t2, t3, key;

	t1 = bpf_get_globaltimer();
#if PART == 9
	key = l->host_ns + 1;
#else
	key = 0x5eed;
#endif
	if (c && key == 7)
		__sync_fetch_and_add(c, 1);
	t2 = bpf_get_globaltimer();
	if (c && bpf_map_lookup_elem(&spans, &key))
		__sync_fetch_and_add(c, 1);
	t3 = bpf_get_globaltimer();
	hist(&t_read, t2 - t1);
	hist(&t_lookup, t3 - t2);
	hist(&t_whole, t3 - now);
#elif PART == 8
	if (c && l->host_ns == 1)
		__sync_fetch_and_add(c, 1);
#elif PART == 5
	__u64 key = l->host_ns + 1;
	if (c && bpf_map_lookup_elem(&spans, &key))
		__sync_fetch_and_add(c, 1);
#endif
#endif
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
