// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * legacy_maps: per-SM call counts with old-style map definitions.
 *
 * Older probes (and tutorials written before BTF-defined maps) declare maps
 * as `struct bpf_map_def` in the "maps" section. A GPU user porting such a
 * probe keeps them; bpf2ptx must read the definitions from the section
 * bytes since there is no BTF for them. libbpf 1.x refuses this layout.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

/* libbpf 1.x headers no longer define it. */
struct bpf_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	unsigned int map_flags;
};

struct bpf_map_def SEC("maps") sm_calls = {
	.type = BPF_MAP_TYPE_HASH,
	.key_size = sizeof(__u32),
	.value_size = sizeof(__u64),
	.max_entries = 256,
	.map_flags = 0,
};

struct bpf_map_def SEC("maps") totals = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(__u32),
	.value_size = sizeof(__u64),
	.max_entries = 2,
	.map_flags = 0,
};

SEC("kprobe/_Z13histogram_gpuPKjPji")
int count_sm(void *ctx)
{
	__u32 sm = (__u32)bpf_get_sm_id();
	__u32 slot = 0;
	__u64 one = 1, *v;

	v = bpf_map_lookup_elem(&sm_calls, &sm);
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		bpf_map_update_elem(&sm_calls, &sm, &one, BPF_NOEXIST);

	v = bpf_map_lookup_elem(&totals, &slot);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

SEC("kretprobe/_Z13histogram_gpuPKjPji")
int count_exit(void *ctx)
{
	__u32 slot = 1;
	__u64 *v = bpf_map_lookup_elem(&totals, &slot);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
