// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * block_timing: wall time of every thread block of a kernel.
 *
 * A GPU user runs this to find straggler blocks (load imbalance, tail
 * effects). Thread (0,0,0) of each block stores %globaltimer at kernel
 * entry in a GPU hash keyed by the linear block id; at exit it adds the
 * elapsed nanoseconds to `block_ns` under the same key.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

#define MAX_BLOCKS 4096

struct {
	__uint(type, BPF_MAP_TYPE_GPU_HASH_MAP);
	__uint(max_entries, MAX_BLOCKS);
	__type(key, __u64);
	__type(value, __u64);
} block_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_GPU_HASH_MAP);
	__uint(max_entries, MAX_BLOCKS);
	__type(key, __u64);
	__type(value, __u64);
} block_ns SEC(".maps");

static __always_inline int is_block_leader(void)
{
	__u64 x, y, z;

	bpf_get_thread_idx(&x, &y, &z);
	return (x | y | z) == 0;
}

static __always_inline __u64 linear_block_id(void)
{
	__u64 bx, by, bz, gx, gy, gz;

	bpf_get_block_idx(&bx, &by, &bz);
	bpf_get_grid_dim(&gx, &gy, &gz);
	return (bz * gy + by) * gx + bx;
}

SEC("kprobe/_Z6matMulPKfS0_Pfi")
int block_enter(void *ctx)
{
	__u64 key, now;

	if (!is_block_leader())
		return 0;
	key = linear_block_id();
	now = bpf_get_globaltimer();
	bpf_map_update_elem(&block_start, &key, &now, BPF_ANY);
	return 0;
}

SEC("kretprobe/_Z6matMulPKfS0_Pfi")
int block_exit(void *ctx)
{
	__u64 key, now, delta, *start, *acc;

	if (!is_block_leader())
		return 0;
	now = bpf_get_globaltimer();
	key = linear_block_id();
	start = bpf_map_lookup_elem(&block_start, &key);
	if (!start)
		return 0;
	delta = now - *start;
	acc = bpf_map_lookup_elem(&block_ns, &key);
	if (acc) {
		*acc += delta;
	} else {
		bpf_map_update_elem(&block_ns, &key, &delta, BPF_NOEXIST);
	}
	bpf_map_delete_elem(&block_start, &key);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
