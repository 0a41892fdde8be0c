/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Over-full (benches/gpu-hash, case 2): every thread inserts its own key (global thread
 * id, value VALUE_OF(key), BPF_ANY) at kernel entry into `keys`, a map of MAP_TYPE with
 * MAX_ENTRIES entries. With 2^20 threads and 4096 entries, 4096 inserts succeed and the
 * rest are refused (hash: -E2BIG, counted `full`) or evict (LRU: counted `evicted`).
 */
#include "common.h"

U32_U64_MAP(keys, MAP_TYPE, MAX_ENTRIES);

SEC("gpu/entry/*")
int overfull_insert(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 key = (__u32)bpf2ptx_get_global_thread_id();
	__u64 value = VALUE_OF(key);

	bpf_map_update_elem(&keys, &key, &value, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
