// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Probes as published (benches/gpu-hash, case 3), the cuda-counter pattern: every thread
 * counts itself under its own key in a hash of 1024 entries: lookup, add 1 if present,
 * else insert 1 with BPF_NOEXIST. With 2^24 threads, 1024 keys get in and every other
 * insert is refused (-E2BIG, counted `full`).
 */
#include "common.h"

U32_U64_MAP(counts, BPF_MAP_TYPE_HASH, 1024);

SEC("gpu/entry/*")
int count_thread(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 key = (__u32)bpf2ptx_get_global_thread_id();
	__u64 *v = bpf_map_lookup_elem(&counts, &key);

	if (v) {
		__sync_fetch_and_add(v, 1);
	} else {
		__u64 one = 1;

		bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
