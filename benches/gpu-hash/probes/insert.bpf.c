// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Insert throughput (benches/gpu-hash, case 4): every thread of vecadd 2^22 inserts its
 * own key (global thread id, value VALUE_OF(key), BPF_ANY) into `table`, a hash of
 * 2^22 entries: from empty to the table's largest load, 1/2 (2^23 slots).
 */
#include "common.h"
#ifndef KEY_OF
#define KEY_OF(id) ((__u32)(id))
#endif

#define TABLE_ENTRIES (1 << 22)
U32_U64_MAP(table, BPF_MAP_TYPE_HASH, TABLE_ENTRIES);

SEC("gpu/entry/*")
int insert_key(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 key = KEY_OF(bpf2ptx_get_global_thread_id());
	__u64 value = VALUE_OF(key);

	bpf_map_update_elem(&table, &key, &value, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
