/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* bpftime's device-memory GPU maps: a GPU hash map (1501, one shared copy, as in its
 * gpu_shared_map example) and a per-thread array (1502, one copy of each element per GPU
 * thread, as in threadhist): each thread counts its own exits and the hash map keeps the
 * last thread index seen per block. */
#define BPF_NO_GLOBAL_DATA
#include "bpftime_gpu.h"

struct {
	__uint(type, BPF_MAP_TYPE_GPU_HASH_MAP);
	__uint(max_entries, 256);
	__type(key, u32);
	__type(value, u64);
} last_thread SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERGPUTD_ARRAY_MAP);
	__uint(max_entries, 2);
	__type(key, u32);
	__type(value, u64);
} per_thread SEC(".maps");

SEC("kprobe/" VEC_ADD)
int cuda__thread_enter()
{
	u32 key = 1;
	u64 now = bpf_get_globaltimer();

	bpf_map_update_elem(&per_thread, &key, &now, BPF_ANY);
	return 0;
}

SEC("kretprobe/" VEC_ADD)
int cuda__thread_exit()
{
	u64 tx, ty, tz, bx, by, bz;
	u32 key = 0, block;
	u64 *calls, *started;

	calls = bpf_map_lookup_elem(&per_thread, &key);
	if (calls)
		*calls += 1;
	key = 1;
	started = bpf_map_lookup_elem(&per_thread, &key);
	if (started && *started)
		*started = bpf_get_globaltimer() - *started;

	bpf_get_thread_idx(&tx, &ty, &tz);
	bpf_get_block_idx(&bx, &by, &bz);
	block = (u32)bx;
	bpf_map_update_elem(&last_thread, &block, &tx, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
