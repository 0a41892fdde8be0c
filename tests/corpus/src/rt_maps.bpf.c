// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * rt_maps: every map kind of the device runtime under a million threads, for
 * tests/gpu/matrix.py, which checks the maps against a CPU model of the launch.
 *
 * Thread g (global thread id, 1-D launch) adds 1 to:
 *   arr[g % 64]   array (2), read before the add, so it stays unsharded
 *   pcpu[lane]    percpu array (6), only added to: sharded automatically
 *   garr[g % 16]  GPU array (1503), read before the add
 * counts itself in hash (1) under key g % 4096 (the first thread inserts the key
 * with BPF_NOEXIST), writes g into its per-thread (1502) slot, and then, on the
 * GPU hash (1501) `churn`, inserts key g % 1024 with BPF_NOEXIST and deletes it
 * again: the threads of a key race inserts against deletes. Per key, inserts
 * that succeeded minus deletes that succeeded must be the number of copies of
 * the key left in the table (0 or 1); `res` counts every result by kind.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

#define BIG (1ULL << 62)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 32);
	__type(key, __u32);
	__type(value, __u64);
} pcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} garr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERTHREAD_ARRAY_MAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} mine SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_GPU_HASH_MAP);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} churn SEC(".maps");

/* Per churn key: [0] inserts that succeeded, [1] deletes that succeeded. */
struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, 2048);
	__type(key, __u32);
	__type(value, __u64);
} churn_ops SEC(".maps");

/*
 * Results: 0 insert ok, 1 -EEXIST, 2 -E2BIG, 3 -EBUSY, 4 other insert error,
 * 5 delete ok, 6 -ENOENT, 7 other delete error, 8 hash lookup failed.
 */
struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, 9);
	__type(key, __u32);
	__type(value, __u64);
} res SEC(".maps");

static __always_inline void bump(void *map, __u32 k)
{
	__u64 *v = bpf_map_lookup_elem(map, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("kprobe/rt_maps")
int rt_maps(void *ctx)
{
	__u64 g = bpf2ptx_get_global_thread_id(), zero = 0;
	__u32 k, zero32 = 0;
	__u64 *v;
	long r;

	k = g % 64;
	v = bpf_map_lookup_elem(&arr, &k);
	if (v && *v < BIG)
		__sync_fetch_and_add(v, 1);
	bump(&pcpu, bpf_get_lane_id());
	k = g % 16;
	v = bpf_map_lookup_elem(&garr, &k);
	if (v && *v < BIG)
		__sync_fetch_and_add(v, 1);

	__u64 hk = g % 4096;
	v = bpf_map_lookup_elem(&hash, &hk);
	if (!v) {
		bpf_map_update_elem(&hash, &hk, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&hash, &hk);
	}
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		bump(&res, 8);

	v = bpf_map_lookup_elem(&mine, &zero32);
	if (v)
		*v = g;

	__u32 ck = g % 1024;
	r = bpf_map_update_elem(&churn, &ck, &g, BPF_NOEXIST);
	if (r == 0) {
		bump(&res, 0);
		bump(&churn_ops, 2 * ck);
	} else if (r == -17) {
		bump(&res, 1);
	} else if (r == -7) {
		bump(&res, 2);
	} else if (r == -16) {
		bump(&res, 3);
	} else {
		bump(&res, 4);
	}
	r = bpf_map_delete_elem(&churn, &ck);
	if (r == 0) {
		bump(&res, 5);
		bump(&churn_ops, 2 * ck + 1);
	} else if (r == -2) {
		bump(&res, 6);
	} else {
		bump(&res, 7);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
