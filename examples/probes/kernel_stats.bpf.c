// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * kernel_stats: per-kernel launch counts and warp-time histograms of a whole application
 * under `bpf2ptx trace`, across modules. Kernels are told apart by the id the trace gives
 * each kernel name (struct bpf2ptx_launch_ctx's `kernel`: 1 for the first name launched
 * in the process, 2 for the next, ...), not by ctx->kernel, which counts the .entry
 * functions of one module: every Triton and torch.compile kernel is a module of its own,
 * so its index there is always 0.
 *
 * A host-side program runs at every launch call, before it reaches the driver: it counts
 * the call in host_launches[id] and the warps it launches in host_warps[id], keeps the
 * FNV-1a hash of the kernel's name in kernel_hashes[id] (a reader names the ids by
 * hashing the names it knows), and stores id in `current`, an array in pinned host memory
 * that the GPU probes read. On the GPU, thread (0,0,0) of block (0,0,0) counts the launch
 * in gpu_launches[id]; lane 0 of each warp stores %globaltimer at entry (warp_start, a
 * per-warp array) and at exit adds 1 to warp_hist[id * 64 + log2(ns the warp ran)].
 *
 * `current` is one slot per process, as the launch time is in trace_latency.bpf.c: the
 * GPU side is right for launches that do not overlap (CUDA_LAUNCH_BLOCKING=1, or an
 * application that synchronises after each launch); a kernel that starts after the next
 * launch call reads that launch's id. The host side is exact in any case, and is what
 * the GPU side is compared with: gpu_launches[id] = host_launches[id] and the sum of
 * warp_hist[id * 64 ...] = host_warps[id] for every kernel the trace instrumented, 0 for
 * the others (host programs run at every launch, probed or not). Ids at or above
 * MAX_KERNELS count in slot 0, which is no kernel's.
 */
#include "common.h"

#define MAX_KERNELS 1024
#define BUCKETS 64

/* The kernel id of the latest launch call (host), read by the GPU probes. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} current SEC(".maps");

/* Per kernel id: launch calls, warps launched, FNV-1a 64 of the kernel's PTX name. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_KERNELS);
	__type(key, __u32);
	__type(value, __u64);
} host_launches SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_KERNELS);
	__type(key, __u32);
	__type(value, __u64);
} host_warps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_KERNELS);
	__type(key, __u32);
	__type(value, __u64);
} kernel_hashes SEC(".maps");

/* Per kernel id: launches whose first block ran the probes. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_KERNELS);
	__type(key, __u32);
	__type(value, __u64);
} gpu_launches SEC(".maps");

/* Warps per kernel id and log2 of their time in the kernel (ns): key id * 64 + log2. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_KERNELS * BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} warp_hist SEC(".maps");

/* Each warp's entry time (one copy per warp of the launch). */
struct {
	__uint(type, BPF_MAP_TYPE_PERWARP_ARRAY_MAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} warp_start SEC(".maps");

static __always_inline void add(void *map, __u32 k, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(map, &k);

	if (c)
		__sync_fetch_and_add(c, v);
}

static __always_inline __u32 slot(__u64 id)
{
	return id < MAX_KERNELS ? (__u32)id : 0;
}

/* The id the latest launch call stored (0 when the map is not there). */
static __always_inline __u32 current_id(void)
{
	__u32 zero = 0;
	__u64 *c = bpf_map_lookup_elem(&current, &zero);

	return c ? slot(*c) : 0;
}

SEC("host/launch/*")
int on_launch(struct bpf2ptx_launch_ctx *ctx)
{
	__u32 zero = 0, id = slot(ctx->kernel);
	__u64 blocks = (__u64)ctx->grid_x * ctx->grid_y * ctx->grid_z;
	__u64 threads = (__u64)ctx->block_x * ctx->block_y * ctx->block_z;
	__u64 *c = bpf_map_lookup_elem(&current, &zero);
	__u64 *h = bpf_map_lookup_elem(&kernel_hashes, &id);

	add(&host_launches, id, 1);
	add(&host_warps, id, blocks * ((threads + 31) >> 5));
	if (h)
		*h = ctx->kernel_hash;
	if (c)
		*c = id;
	return 0;
}

SEC("gpu/entry.block/*")
int launch_start(struct bpf2ptx_kernel_ctx *ctx)
{
	__u64 bx, by, bz;

	bpf_get_block_idx(&bx, &by, &bz);
	if (bx | by | bz)
		return 0;
	add(&gpu_launches, current_id(), 1);
	return 0;
}

SEC("gpu/entry.warp/*")
int warp_enter(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 zero = 0;
	__u64 *start = bpf_map_lookup_elem(&warp_start, &zero);

	if (start)
		*start = bpf_get_globaltimer();
	return 0;
}

SEC("gpu/exit.warp/*")
int warp_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 zero = 0;
	__u64 *start = bpf_map_lookup_elem(&warp_start, &zero);
	__u64 now;

	if (!start)
		return 0;
	now = bpf_get_globaltimer();
	add(&warp_hist, current_id() * BUCKETS + log2_u64(now - *start), 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
