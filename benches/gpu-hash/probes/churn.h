/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Churn (benches/gpu-hash, case 1): every warp (GRAN ".warp") or thread (GRAN "") puts
 * its start time into the hash `start` at kernel entry, keyed by its global warp or
 * thread id; at exit it looks the key up, adds 1 to hist[log2(now - start)] and deletes
 * the key, or adds 1 to missed[0] when the key is not there. After each launch the map
 * is empty again, so a hash map that reuses deleted slots runs launch 100 as fast as
 * launch 1.
 *
 * The includer defines GRAN, SHIFT (5 per warp: global thread id / 32 = global warp id
 * with 256-thread blocks; 0 per thread) and MAX_ENTRIES, and may define KEY_OF (common.h:
 * the id itself, or MIX_KEY for keys whose homes collide).
 */
#include "common.h"
#ifndef KEY_OF
#define KEY_OF(id) ((__u32)(id))
#endif

U32_U64_MAP(start, BPF_MAP_TYPE_HASH, MAX_ENTRIES);
U32_U64_MAP(hist, BPF_MAP_TYPE_ARRAY, 64);
U32_U64_MAP(missed, BPF_MAP_TYPE_ARRAY, 1);

SEC("gpu/entry" GRAN "/*")
int churn_enter(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 key = KEY_OF(bpf2ptx_get_global_thread_id() >> SHIFT);
	__u64 now = bpf_ktime_get_ns();

	bpf_map_update_elem(&start, &key, &now, BPF_ANY);
	return 0;
}

SEC("gpu/exit" GRAN "/*")
int churn_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 key = KEY_OF(bpf2ptx_get_global_thread_id() >> SHIFT);
	__u64 *v = bpf_map_lookup_elem(&start, &key);
	__u64 *slot;
	__u32 b, zero = 0;

	if (v) {
		b = log2_u64(bpf_ktime_get_ns() - *v);
		slot = bpf_map_lookup_elem(&hist, &b);
		if (slot)
			__sync_fetch_and_add(slot, 1);
		bpf_map_delete_elem(&start, &key);
	} else {
		slot = bpf_map_lookup_elem(&missed, &zero);
		if (slot)
			__sync_fetch_and_add(slot, 1);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
