// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * launch_latency: how long after the host's launch call each block starts.
 *
 * The host stores its launch time, converted to the GPU's %globaltimer
 * clock, in launch[0] just before it launches the kernel (the example keeps
 * that map in pinned host memory, so the store needs no copy). At block
 * entry one thread per block stores now - launch[0] in block_lat[block].
 */
#include "common.h"

#define MAX_BLOCKS (1 << 17)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} launch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_BLOCKS);
	__type(key, __u32);
	__type(value, __u64);
} block_lat SEC(".maps");

SEC("gpu/entry.block/*")
int block_start(struct bpf2ptx_kernel_ctx *ctx)
{
	__u64 bx, by, bz, gx, gy, gz, now = bpf_get_globaltimer();
	__u32 zero = 0, blk;
	__u64 *t0 = bpf_map_lookup_elem(&launch, &zero), *lat;

	if (!t0)
		return 0;
	bpf_get_block_idx(&bx, &by, &bz);
	bpf_get_grid_dim(&gx, &gy, &gz);
	blk = (__u32)((bz * gy + by) * gx + bx);
	lat = bpf_map_lookup_elem(&block_lat, &blk);
	if (lat)
		*lat = now - *t0;
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
