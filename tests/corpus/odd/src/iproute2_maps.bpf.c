/* iproute2's legacy map layout (struct bpf_elf_map in section "maps", as in iproute2's
 * include/bpf_elf.h and examples/bpf/): id, pinning, inner_id and inner_idx after the
 * flags. A GPU probe and a tc classifier share the maps. */
#include "odd.h"

#define PIN_NONE 0
#define PIN_OBJECT_NS 1
#define PIN_GLOBAL_NS 2

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

struct bpf_elf_map SEC("maps") acc_map = {
	.type = BPF_MAP_TYPE_ARRAY,
	.size_key = sizeof(__u32),
	.size_value = sizeof(__u64),
	.pinning = PIN_GLOBAL_NS,
	.max_elem = 2,
};

struct bpf_elf_map SEC("maps") flow_map = {
	.type = BPF_MAP_TYPE_HASH,
	.size_key = sizeof(__u32),
	.size_value = sizeof(__u64),
	.id = 7,
	.pinning = PIN_OBJECT_NS,
	.max_elem = 64,
};

SEC("gpu/entry/vecadd")
int count_launch(void *ctx)
{
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&acc_map, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

SEC("classifier")
int cls_main(void *skb)
{
	__u32 key = 1;
	__u64 one = 1;
	__u64 *v = bpf_map_lookup_elem(&flow_map, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		bpf_map_update_elem(&flow_map, &key, &one, 0);
	return 0;
}

char __license[] SEC("license") = "GPL";
