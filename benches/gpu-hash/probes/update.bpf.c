// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Update throughput (benches/gpu-hash, case 4): the same map as insert.bpf.c, which the
 * host fills first (a copy of the table insert.bpf.c built); every thread replaces its
 * key's value in place with BPF_EXIST (value ~VALUE_OF(key)).
 */
#include "common.h"
#ifndef KEY_OF
#define KEY_OF(id) ((__u32)(id))
#endif

#define TABLE_ENTRIES (1 << 22)
U32_U64_MAP(table, BPF_MAP_TYPE_HASH, TABLE_ENTRIES);

SEC("gpu/entry/*")
int update_key(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 key = KEY_OF(bpf2ptx_get_global_thread_id());
	__u64 value = ~VALUE_OF(key);

	bpf_map_update_elem(&table, &key, &value, BPF_EXIST);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
