/* BTF-defined maps of maps: an array of maps with its inner maps as initial values, and
 * a hash of maps whose inner map is an anonymous struct. */
#include "odd.h"

struct inner_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} inner_a SEC(".maps"), inner_b SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 3);
	__type(key, __u32);
	__array(values, struct inner_map);
} outer_arr SEC(".maps") = {
	.values = { [0] = &inner_a, [2] = &inner_b },
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 8);
	__type(key, __u32);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_HASH);
		__uint(max_entries, 16);
		__type(key, __u32);
		__type(value, __u32);
	});
} outer_hash SEC(".maps");

SEC("gpu/entry/vecadd")
int lookup_outer(void *ctx)
{
	__u32 key = 0;
	__u64 *v;
	void *inner = bpf_map_lookup_elem(&outer_arr, &key);
	if (!inner)
		return 0;
	v = bpf_map_lookup_elem(inner, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

SEC("gpu/exit/vecadd")
int direct_inner(void *ctx)
{
	__u32 key = 1;
	__u64 *v = bpf_map_lookup_elem(&inner_b, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

SEC("xdp")
int host_side(void *ctx)
{
	__u32 key = 2;
	return bpf_map_lookup_elem(&outer_hash, &key) != 0;
}

char __license[] SEC("license") = "GPL";
