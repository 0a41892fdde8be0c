// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * mixed: one object with a GPU probe and a host-side program, as tools that watch both the
 * CPU launch path and the kernel ship them. `bpf2ptx mixed.o -o x.ptx` compiles the GPU
 * probe and names the uprobe it skipped (libbpf loads that one into Linux).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

SEC("uprobe/cudaLaunchKernel")
int host_launch(void *ctx)
{
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&seen, &key);

	if (v)
		*v = bpf_ktime_get_ns();
	return 0;
}

SEC("kprobe/_Z6vecAddPKfS0_Pfi")
int gpu_entry(void *ctx)
{
	__u32 key = 1;
	__u64 *v = bpf_map_lookup_elem(&seen, &key);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
