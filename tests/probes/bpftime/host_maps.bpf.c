/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* bpftime's host-memory GPU maps (for platforms without CUDA IPC): a per-thread array in
 * host memory (1512) and a shared array in host memory (1513), both read and written from
 * the GPU through lookup and update as bpftime's host_map_test does. */
#define BPF_NO_GLOBAL_DATA
#include "bpftime_gpu.h"

#define SLOTS 8

struct {
	__uint(type, BPF_MAP_TYPE_PERGPUTD_ARRAY_HOST_MAP);
	__uint(max_entries, SLOTS);
	__type(key, u32);
	__type(value, u64);
} thread_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_HOST_MAP);
	__uint(max_entries, SLOTS);
	__type(key, u32);
	__type(value, u64);
} lane_hits SEC(".maps");

SEC("kprobe/" VEC_ADD)
int cuda__host_enter()
{
	u64 tx, ty, tz;
	u32 key = 0, lane;
	u64 now = bpf_get_globaltimer(), one = 1;
	u64 *hits;

	bpf_get_thread_idx(&tx, &ty, &tz);
	bpf_map_update_elem(&thread_slots, &key, &now, BPF_ANY);

	lane = (u32)(tx % SLOTS);
	hits = bpf_map_lookup_elem(&lane_hits, &lane);
	if (hits) {
		u64 next = *hits + 1;
		bpf_map_update_elem(&lane_hits, &lane, &next, BPF_ANY);
	} else {
		bpf_map_update_elem(&lane_hits, &lane, &one, BPF_ANY);
	}
	return 0;
}

SEC("kretprobe/" VEC_ADD)
int cuda__host_exit()
{
	u64 tx, ty, tz;
	u32 key = 0;
	u64 *start, spent = 0;

	bpf_get_thread_idx(&tx, &ty, &tz);
	start = bpf_map_lookup_elem(&thread_slots, &key);
	if (start && *start)
		spent = bpf_get_globaltimer() - *start;
	key = 1;
	bpf_map_update_elem(&thread_slots, &key, &spent, BPF_ANY);
	key = 2;
	bpf_map_update_elem(&thread_slots, &key, &tx, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
