// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * warp_timing: time spent in a kernel by each warp, and on which SM it ran.
 *
 * A GPU user runs this to see warp-level imbalance (divergent warps that
 * finish late) and how warps were spread over SMs. Lane 0 of each warp
 * records %globaltimer at entry; at exit it accumulates the duration and a
 * call count. The key is (linear block id, warp index inside the block).
 * The hash is not preallocated (BPF_F_NO_PREALLOC).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct warp_key {
	__u32 block;
	__u32 warp;
};

struct warp_stat {
	__u64 start_ns;
	__u64 total_ns;
	__u64 calls;
	__u32 sm;
	__u32 hw_warp;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct warp_key);
	__type(value, struct warp_stat);
} warps SEC(".maps");

static __always_inline void warp_key_of(struct warp_key *k)
{
	__u64 tx, ty, tz, dx, dy, dz, bx, by, bz, gx, gy, gz;

	bpf_get_thread_idx(&tx, &ty, &tz);
	bpf_get_block_dim(&dx, &dy, &dz);
	bpf_get_block_idx(&bx, &by, &bz);
	bpf_get_grid_dim(&gx, &gy, &gz);
	k->warp = (__u32)(((tz * dy + ty) * dx + tx) / 32);
	k->block = (__u32)((bz * gy + by) * gx + bx);
}

SEC("kprobe/_Z7reduce0PfS_j")
int warp_enter(void *ctx)
{
	struct warp_key key = {};
	struct warp_stat init = {}, *st;

	if (bpf_get_lane_id() != 0)
		return 0;
	warp_key_of(&key);
	st = bpf_map_lookup_elem(&warps, &key);
	if (st) {
		st->start_ns = bpf_get_globaltimer();
		return 0;
	}
	init.start_ns = bpf_get_globaltimer();
	init.sm = (__u32)bpf_get_sm_id();
	init.hw_warp = (__u32)bpf_get_warp_id();
	bpf_map_update_elem(&warps, &key, &init, BPF_NOEXIST);
	return 0;
}

SEC("kretprobe/_Z7reduce0PfS_j")
int warp_exit(void *ctx)
{
	struct warp_key key = {};
	struct warp_stat *st;
	__u64 now;

	if (bpf_get_lane_id() != 0)
		return 0;
	now = bpf_get_globaltimer();
	warp_key_of(&key);
	st = bpf_map_lookup_elem(&warps, &key);
	if (!st || st->start_ns == 0 || now < st->start_ns)
		return 0;
	st->total_ns += now - st->start_ns;
	st->calls += 1;
	st->start_ns = 0;
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
