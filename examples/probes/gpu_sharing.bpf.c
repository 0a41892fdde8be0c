// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * gpu_sharing: what a process sees of the GPU when another process shares it
 * (examples/gpu_sharing/README.md). Under `bpf2ptx trace`, per process:
 *
 *   - per-block launch latency: a host-side program stores each launch call's
 *     time (on the GPU's %globaltimer timeline) in `launch`, an array in pinned
 *     host memory that the GPU probes read; at block entry one thread per block
 *     counts globaltimer - launch time in three histograms of the same blocks:
 *     log2 ns (a readable overview), 2 us buckets up to 2 ms (the uncontended
 *     range, fine enough for percentiles there) and 100 us buckets up to 100 ms
 *     (the waits behind another process's time slice);
 *   - per launch: its first block's start and last block's end (`spans`, keyed
 *     by the launch time), so per-launch latency and kernel span come out exact;
 *   - blocks per SM: sm_blocks[%smid], as examples/probes/blocks_per_sm.bpf.c.
 *
 * The launch time is one slot per process, as in trace_latency.bpf.c: it is
 * right for launches that do not overlap within the process (the example's app
 * synchronises after each launch); a block that started before the time it
 * read (an overlapping launch) is counted in `early` and nowhere else.
 */
#include "common.h"

struct launch_info {
	__u64 host_ns;	/* the launch call, GPU timeline */
	__u64 seq;	/* its number in the process */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct launch_info);
} launch SEC(".maps");

/* Launches the host program ran at. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} launches SEC(".maps");

/* Blocks per log2 of their start latency in ns. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} lat_log2 SEC(".maps") __attribute__((btf_decl_tag("bpf2ptx:hist=log2")));

/* bpftrace lhist indices (specs/trace.md): key 0 below MIN (unused: latencies are
 * not negative), key k in [MIN + (k-1) STEP, MIN + k STEP), key N + 1 at MAX or
 * more, N = (MAX - MIN) / STEP = 1000 for both. */
#define LIN_KEYS 1002

/* Blocks per 2 us of start latency, up to 2 ms. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LIN_KEYS);
	__type(key, __u32);
	__type(value, __u64);
} lat_fine SEC(".maps") __attribute__((btf_decl_tag("bpf2ptx:hist=linear:0:2000:2")));

/* Blocks per 100 us of start latency, up to 100 ms. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LIN_KEYS);
	__type(key, __u32);
	__type(value, __u64);
} lat_coarse SEC(".maps") __attribute__((btf_decl_tag("bpf2ptx:hist=linear:0:100000:100")));

/* Blocks that ran on each SM (%smid). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} sm_blocks SEC(".maps");

/* Blocks that started before the launch time they read (overlapped launches). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} early SEC(".maps");

/* Per launch (key: its launch time): first block start, last block end. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct bpf2ptx_launch_span);
} spans SEC(".maps") __attribute__((btf_decl_tag("bpf2ptx:launch_spans")));

static __always_inline void count(void *map, __u32 k)
{
	__u64 *c = bpf_map_lookup_elem(map, &k);

	if (c)
		__sync_fetch_and_add(c, 1);
}

SEC("host/launch/*")
int on_launch(struct bpf2ptx_launch_ctx *ctx)
{
	__u32 zero = 0;
	struct launch_info *l = bpf_map_lookup_elem(&launch, &zero);
	__u64 *n = bpf_map_lookup_elem(&launches, &zero);

	if (l) {
		l->host_ns = ctx->host_ns;
		l->seq = ctx->seq;
	}
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

SEC("gpu/entry.block/*")
int block_start(struct bpf2ptx_kernel_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer(), t0, us;
	__u32 zero = 0;
	struct launch_info *l = bpf_map_lookup_elem(&launch, &zero);

	count(&sm_blocks, (__u32)bpf_get_sm_id());
	if (!l)
		return 0;
	t0 = l->host_ns;
	if (now < t0) {
		count(&early, 0);
		return 0;
	}
	us = (now - t0) / 1000;
	count(&lat_log2, log2_u64(now - t0));
	count(&lat_fine, us >= 2000 ? LIN_KEYS - 1 : (__u32)(us / 2) + 1);
	count(&lat_coarse, us >= 100000 ? LIN_KEYS - 1 : (__u32)(us / 100) + 1);
	bpf2ptx_launch_span_start(&spans, t0, now);
	return 0;
}

SEC("gpu/exit.block/*")
int block_end(struct bpf2ptx_kernel_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer();
	__u32 zero = 0;
	struct launch_info *l = bpf_map_lookup_elem(&launch, &zero);

	if (l)
		bpf2ptx_launch_span_end(&spans, l->host_ns, now);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
