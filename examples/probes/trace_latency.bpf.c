// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * trace_latency: per-block launch latency of an unmodified application, with
 * `bpf2ptx trace` (examples/trace_latency/README.md).
 *
 * A host-side program runs inside the application at every launch, before the
 * launch reaches the driver, and stores the launch call's time (on the GPU's
 * %globaltimer timeline: bpf2ptx trace measures the host/GPU clock offset) in
 * `launch`, an array that lives in pinned host memory shared with the GPU.
 * At block entry one thread per block reads it and counts
 * globaltimer - launch time in two histograms (log2 ns and 1 us buckets), and
 * keeps the launch's first block start and last block end in `spans`, which
 * --trace-events turns into one Perfetto slice per launch.
 *
 * The launch time is one value: a kernel still starting blocks when the next
 * launch is made reads the newer time; such blocks (now < launch time) are
 * counted in `early`, not in the histograms.
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

#define US_BUCKETS 1002
/* Blocks per microsecond of start latency: key 0 below 0 (unused), key k in
 * [k-1, k) us for k = 1..1000, key 1001 at 1000 us or more (bpftrace's lhist). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, US_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} lat_us SEC(".maps") __attribute__((btf_decl_tag("bpf2ptx:hist=linear:0:1000:1")));

/* Blocks that started before the launch time they read (overlapped launches). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} early SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct bpf2ptx_launch_span);
} spans SEC(".maps") __attribute__((btf_decl_tag("bpf2ptx:launch_spans")));

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
	__u64 now = bpf_get_globaltimer(), t0, d, *c;
	__u32 zero = 0, k;
	struct launch_info *l = bpf_map_lookup_elem(&launch, &zero);

	if (!l)
		return 0;
	t0 = l->host_ns;
	if (now < t0) {
		c = bpf_map_lookup_elem(&early, &zero);
		if (c)
			__sync_fetch_and_add(c, 1);
		return 0;
	}
	d = now - t0;
	k = log2_u64(d);
	c = bpf_map_lookup_elem(&lat_log2, &k);
	if (c)
		__sync_fetch_and_add(c, 1);
	k = d / 1000 >= US_BUCKETS - 2 ? US_BUCKETS - 1 : (__u32)(d / 1000) + 1;
	c = bpf_map_lookup_elem(&lat_us, &k);
	if (c)
		__sync_fetch_and_add(c, 1);
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
