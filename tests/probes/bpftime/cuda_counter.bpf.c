/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The shape of bpftime's cuda-counter example: Linux hash maps keyed by block index and
 * pid, an entry probe and an exit probe on bpftime's vector add, the GPU timer and the
 * block index helpers, bpf_printk with at most three arguments (trace_printk, 6). The
 * baseline: everything here is what bpf2ptx supports today. */
#define BPF_NO_GLOBAL_DATA
#include "bpftime_gpu.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u64);
	__type(value, u64);
} entered_at SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u32);
	__type(value, u64);
} launches SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u32);
	__type(value, u64);
} busy_ns SEC(".maps");

SEC("kprobe/" VEC_ADD)
int cuda__count_entry()
{
	u64 bx, by, bz;
	u64 now = bpf_get_globaltimer();
	u32 pid = bpf_get_current_pid_tgid() >> 32;
	u64 first = 1;
	u64 *n;

	bpf_get_block_idx(&bx, &by, &bz);
	bpf_map_update_elem(&entered_at, &bx, &now, BPF_ANY);

	n = bpf_map_lookup_elem(&launches, &pid);
	if (n)
		__atomic_add_fetch(n, 1, __ATOMIC_SEQ_CST);
	else
		bpf_map_update_elem(&launches, &pid, &first, BPF_NOEXIST);

	bpf_printk("enter vectorAdd block=%lu at %lu\n", bx, now);
	return 0;
}

SEC("kretprobe/" VEC_ADD)
int cuda__count_exit()
{
	u64 bx, by, bz;
	u32 pid = bpf_get_current_pid_tgid() >> 32;
	u64 *start, *sum, spent;

	bpf_get_block_idx(&bx, &by, &bz);
	start = bpf_map_lookup_elem(&entered_at, &bx);
	if (!start) {
		bpf_printk("exit vectorAdd block=%lu, no entry time\n", bx);
		return 0;
	}
	spent = bpf_get_globaltimer() - *start;
	sum = bpf_map_lookup_elem(&busy_ns, &pid);
	if (sum)
		__atomic_add_fetch(sum, spent, __ATOMIC_RELAXED);
	else
		bpf_map_update_elem(&busy_ns, &pid, &spent, BPF_NOEXIST);
	bpf_printk("exit vectorAdd block=%lu spent=%lu start=%lu\n", bx, spent, *start);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
