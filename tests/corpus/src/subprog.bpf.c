// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * subprog: per-thread iteration statistics built from bpf-to-bpf calls.
 *
 * A GPU user factors a probe into small functions; `static __noinline`
 * keeps them as real subprograms in .text, called with `call` (src=1).
 * `should_sample` is a global function (BTF linkage global), which the
 * kernel verifies on its own. Two programs share the subprograms.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} thread_hits SEC(".maps");

__noinline int should_sample(__u64 tid);

static __noinline __u64 linear_thread_id(void)
{
	__u64 tx, ty, tz, dx, dy, dz, bx, by, bz, gx, gy, gz;
	__u64 block, threads_per_block;

	bpf_get_thread_idx(&tx, &ty, &tz);
	bpf_get_block_dim(&dx, &dy, &dz);
	bpf_get_block_idx(&bx, &by, &bz);
	bpf_get_grid_dim(&gx, &gy, &gz);
	threads_per_block = dx * dy * dz;
	block = (bz * gy + by) * gx + bx;
	return block * threads_per_block + (tz * dy + ty) * dx + tx;
}

static __noinline int bump(__u64 key, __u64 by)
{
	__u64 *v = bpf_map_lookup_elem(&thread_hits, &key);

	if (v) {
		__sync_fetch_and_add(v, by);
		return 0;
	}
	return bpf_map_update_elem(&thread_hits, &key, &by, BPF_NOEXIST);
}

static __noinline int record_thread(__u64 weight)
{
	__u64 tid = linear_thread_id();

	if (!should_sample(tid))
		return 0;
	return bump(tid, weight);
}

__noinline int should_sample(__u64 tid)
{
	return (tid & 31) == 0;
}

SEC("kprobe/_Z8gemm_tileiiiPKfS0_Pf")
int gemm_enter(void *ctx)
{
	return record_thread(1);
}

SEC("kretprobe/_Z8gemm_tileiiiPKfS0_Pf")
int gemm_exit(void *ctx)
{
	return record_thread(1ULL << 32);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
