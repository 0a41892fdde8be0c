// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * map_update_elem / map_delete_elem flags and errors on every array kind and on a hash
 * map, from every thread (tests/gpu/map_ops.py checks the counts and the maps).
 * ok[i] counts the threads whose operation i returned what Linux returns:
 *   arrays (2, 1503, 6 per SM, 1502 per thread, 1600 per warp), key in range:
 *     BPF_ANY 0, BPF_NOEXIST -EEXIST, BPF_EXIST 0; key out of range -E2BIG;
 *     delete -EINVAL; flags 3 -EINVAL;
 *   hash: BPF_EXIST on a key nobody inserts -ENOENT, delete of it -ENOENT,
 *     BPF_ANY 0, then BPF_EXIST 0, then BPF_NOEXIST -EEXIST, lookup finds the value.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

#define ARRAY(name, kind, n)                   \
	struct {                               \
		__uint(type, kind);            \
		__uint(max_entries, n);        \
		__type(key, __u32);            \
		__type(value, __u64);          \
	} name SEC(".maps")

ARRAY(arr, BPF_MAP_TYPE_ARRAY, 64);
ARRAY(garr, BPF_MAP_TYPE_GPU_ARRAY_MAP, 64);
ARRAY(pcpu, BPF_MAP_TYPE_PERCPU_ARRAY, 64);
ARRAY(pt, BPF_MAP_TYPE_PERTHREAD_ARRAY_MAP, 2);
ARRAY(pw, BPF_MAP_TYPE_PERWARP_ARRAY_MAP, 2);
ARRAY(ok, BPF_MAP_TYPE_ARRAY, 64);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 128);
	__type(key, __u64);
	__type(value, __u64);
} hash SEC(".maps");

static __always_inline void tally(__u32 i, int good)
{
	__u64 *c = bpf_map_lookup_elem(&ok, &i);

	if (c && good)
		__sync_fetch_and_add(c, 1);
}

static __always_inline void array_ops(void *map, __u32 base, __u32 k, __u32 n, __u64 v)
{
	__u32 far = n + (__u32)(v % 3);

	tally(base + 0, bpf_map_update_elem(map, &k, &v, BPF_ANY) == 0);
	tally(base + 1, bpf_map_update_elem(map, &k, &v, BPF_NOEXIST) == -17);
	tally(base + 2, bpf_map_update_elem(map, &k, &v, BPF_EXIST) == 0);
	tally(base + 3, bpf_map_update_elem(map, &far, &v, BPF_ANY) == -7);
	tally(base + 4, bpf_map_delete_elem(map, &k) == -22);
	tally(base + 5, bpf_map_update_elem(map, &k, &v, 3) == -22);
}

SEC("kprobe/map_ops")
int map_ops(void *ctx)
{
	__u64 g = bpf2ptx_get_global_thread_id();
	__u32 k = g % 64, zero = 0;
	__u64 key, val, *v;

	array_ops(&arr, 0, k, 64, g);
	array_ops(&garr, 6, k, 64, g);
	array_ops(&pcpu, 12, k, 64, g);
	array_ops(&pt, 18, zero, 2, g);
	array_ops(&pw, 24, zero, 2, g);

	key = 1000000 + g % 8;
	val = g;
	tally(30, bpf_map_update_elem(&hash, &key, &val, BPF_EXIST) == -2);
	tally(31, bpf_map_delete_elem(&hash, &key) == -2);
	key = g % 64;
	val = key * 5;
	tally(32, bpf_map_update_elem(&hash, &key, &val, BPF_ANY) == 0);
	tally(33, bpf_map_update_elem(&hash, &key, &val, BPF_EXIST) == 0);
	tally(34, bpf_map_update_elem(&hash, &key, &val, BPF_NOEXIST) == -17);
	v = bpf_map_lookup_elem(&hash, &key);
	tally(35, v && *v == key * 5);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
