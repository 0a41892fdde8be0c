// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Execution granularity, checked by tests/gpu/per_unit.py (part 3). Each program counts
 * its runs in its own slot of `runs`; the section of g_warp and g_block names the
 * granularity (it wins over --granularity), g_opt's does not (--granularity applies).
 *   slot 0: runs of g_opt          slot 3: g_warp's sum of popc(active mask) = threads
 *                                  (a per-warp probe sees the lanes its leader stands for)
 *   slot 1: runs of g_warp         slot 4: g_warp's sum of lane ids (leader lane 0) = 0
 *   slot 2: runs of g_block        slot 5: g_block's sum of tid.x + tid.y + tid.z = 0
 *   slot 6: g_warp_sub's sum of popc(active mask), read in a subprogram = threads
 *   slot 7: g_block's sum of popc(active mask) = its runs (the block's thread alone)
 *   slot 8: g_opt's sum of popc(active mask): per thread, the lanes of its warp (each warp
 *           of n lanes adds n * n); per warp, n; per block, 1
 * Build: clang -target bpf -O2 -g -mcpu=v3 -I/usr/include/x86_64-linux-gnu \
 *        -I../../../runtime-ptx/include -c granularity.bpf.c -o granularity.o
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 9);
	__type(key, __u32);
	__type(value, __u64);
} runs SEC(".maps");

static __always_inline void add(__u32 slot, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&runs, &slot);

	if (v)
		__sync_fetch_and_add(v, n);
}

SEC("kprobe/g_opt")
int g_opt(void *ctx)
{
	add(0, 1);
	add(8, __builtin_popcountll(bpf2ptx_get_active_mask()));
	return 0;
}

SEC("gpu/entry.warp/g_warp")
int g_warp(void *ctx)
{
	add(1, 1);
	add(3, __builtin_popcountll(bpf2ptx_get_active_mask()));
	add(4, bpf_get_lane_id());
	return 0;
}

/* Not inlined: the lanes word must reach a subprogram too. */
static __attribute__((noinline)) __u64 lanes_here(void)
{
	return __builtin_popcountll(bpf2ptx_get_active_mask());
}

SEC("gpu/entry.warp/g_warp_sub")
int g_warp_sub(void *ctx)
{
	add(6, lanes_here());
	return 0;
}

SEC("gpu/entry.block/g_block")
int g_block(void *ctx)
{
	__u64 x = 0, y = 0, z = 0;

	bpf_get_thread_idx(&x, &y, &z);
	add(2, 1);
	add(5, x + y + z);
	add(7, __builtin_popcountll(bpf2ptx_get_active_mask()));
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
