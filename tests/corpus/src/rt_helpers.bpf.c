// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * rt_helpers: every GPU helper checked against what the launch implies, on a
 * million threads (tests/gpu/matrix.py; 1-D launches).
 *
 * Each thread checks its special registers against each other and counts
 * every failed check in `bad` (all must stay 0); it records the launch shape
 * it sees in `shape` (every thread stores the same values), counts itself
 * per SM in `per_sm` (the sum is the thread count, at most one slot per SM),
 * prints one trace_printk line per 65536 threads and one puts line, and the
 * threads with g % 1024 == 1023 end through bpf_gpu_exit() before counting
 * themselves in `after_exit`, which must stay 0.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} bad SEC(".maps");

/* [0] grid.x [1] block.x [2] grid.y*grid.z*block.y*block.z, stored by every thread. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} shape SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} per_sm SEC(".maps");

/* [0] threads that ran, [1] threads that ran past bpf_gpu_exit(). */
struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} after_exit SEC(".maps");

/* Printk lines go to every 2^shift-th thread (a global in .rodata; libbpf makes
 * .rodata mmapable only when it holds one). */
const volatile __u64 printk_shift = 16;

static __always_inline void add(void *map, __u32 k, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(map, &k);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline void set(void *map, __u32 k, __u64 x)
{
	__u64 *v = bpf_map_lookup_elem(map, &k);

	if (v)
		*v = x;
}

SEC("kprobe/rt_helpers")
int rt_helpers(void *ctx)
{
	__u64 bx, by, bz, dx, dy, dz, tx, ty, tz, gx, gy, gz;
	__u64 g = bpf2ptx_get_global_thread_id();
	__u64 t0 = bpf_ktime_get_ns(), c0 = bpf2ptx_clock64();

	bpf_get_block_idx(&bx, &by, &bz);
	bpf_get_block_dim(&dx, &dy, &dz);
	bpf_get_thread_idx(&tx, &ty, &tz);
	bpf_get_grid_dim(&gx, &gy, &gz);
	add(&after_exit, 0, 1);

	/* 0: global id = block * block size + thread (1-D launch). */
	add(&bad, 0, g != bx * dx + tx);
	/* 1: pid_tgid = block << 32 | thread. */
	add(&bad, 1, bpf_get_current_pid_tgid() != (bx << 32 | tx));
	/* 2, 3: lane and warp from the thread index. */
	add(&bad, 2, bpf_get_lane_id() != tx % 32);
	add(&bad, 3, bpf_get_warp_id() != tx / 32);
	/* 4: both SM ids agree; 5: an SM id below 256. */
	__u64 sm = bpf_get_sm_id();
	add(&bad, 4, sm != bpf_get_smp_processor_id());
	add(&bad, 5, sm >= 256);
	/* 6: indices inside the launch. */
	add(&bad, 6, bx >= gx || tx >= dx || by | bz | ty | tz);
	/* 7: the active mask holds the thread's own lane. */
	add(&bad, 7, !((bpf2ptx_get_active_mask() >> (tx % 32)) & 1));
	/* 8: both timers agree on the time (globaltimer after ktime), and it is not 0. */
	__u64 t1 = bpf_get_globaltimer();
	add(&bad, 8, t0 == 0 || t1 < t0);
	/* 9: the cycle counter moves forward. */
	add(&bad, 9, bpf2ptx_clock64() <= c0);
	/* 10: gpu_membar returns 0. */
	add(&bad, 10, bpf_gpu_membar() != 0);
	set(&shape, 0, gx);
	set(&shape, 1, dx);
	set(&shape, 2, gy * gz * dy * dz);
	if (sm < 256)
		add(&per_sm, sm, 1);
	if (g % (1ULL << printk_shift) == 0)
		bpf_printk("rt_helpers thread %llu block %llu lane %llu", g, bx, tx % 32);
	if (g == 0)
		bpf_puts("rt_helpers puts");
	if (g % 1024 == 1023) {
		bpf_gpu_exit();
		add(&after_exit, 1, 1);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
