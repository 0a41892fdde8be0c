/* iproute2's map-in-map (examples/bpf/bpf_map_in_map.c): the inner map has an id and
 * the slot it goes in (inner_idx); the outer array of maps names it by inner_id. */
#include "odd.h"

#define PIN_GLOBAL_NS 2
#define MAP_INNER_ID 42

struct bpf_elf_map {
	__u32 type;
	__u32 size_key;
	__u32 size_value;
	__u32 max_elem;
	__u32 flags;
	__u32 id;
	__u32 pinning;
	__u32 inner_id;
	__u32 inner_idx;
};

struct bpf_elf_map SEC("maps") map_inner = {
	.type = BPF_MAP_TYPE_ARRAY,
	.size_key = sizeof(__u32),
	.size_value = sizeof(__u32),
	.id = MAP_INNER_ID,
	.inner_idx = 0,
	.pinning = PIN_GLOBAL_NS,
	.max_elem = 1,
};

struct bpf_elf_map SEC("maps") map_outer = {
	.type = BPF_MAP_TYPE_ARRAY_OF_MAPS,
	.size_key = sizeof(__u32),
	.size_value = sizeof(__u32),
	.inner_id = MAP_INNER_ID,
	.pinning = PIN_GLOBAL_NS,
	.max_elem = 1,
};

SEC("gpu/entry/vecadd")
int imm_main(void *ctx)
{
	__u32 key = 0, *val;
	void *inner = bpf_map_lookup_elem(&map_outer, &key);
	if (inner) {
		val = bpf_map_lookup_elem(inner, &key);
		if (val)
			__sync_fetch_and_add(val, 1);
	}
	return 0;
}

char __license[] SEC("license") = "GPL";
