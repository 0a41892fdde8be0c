/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A GPU array shared with the Linux kernel's eBPF (1504, BPF_F_MMAPABLE), as bpftime's
 * threadhist-gpu-kernel-shared-map example uses it: slot 0 counts kernel exits on the
 * GPU; slot 1 belongs to a kernel-side uretprobe on cudaLaunchKernel (not a GPU program,
 * so it is in a section the GPU toolchain must leave to the kernel). */
#define BPF_NO_GLOBAL_DATA
#include "bpftime_gpu.h"

struct {
	__uint(type, BPF_MAP_TYPE_GPU_KERNEL_SHARED_ARRAY_MAP);
	__uint(max_entries, 2);
	__type(key, u32);
	__type(value, u64);
	__uint(map_flags, BPF_F_MMAPABLE);
} shared_counts SEC(".maps");

SEC("kretprobe/" VEC_ADD)
int cuda__shared_exit()
{
	u32 slot = 0;
	u64 *n = bpf_map_lookup_elem(&shared_counts, &slot);

	if (n)
		__atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
	return 0;
}

/* Run by the Linux kernel, not the GPU: bpftime's example attaches it with a
 * "uretprobe/<binary>:<symbol>" section. */
SEC("uretprobe/./vec_add:cudaLaunchKernel")
int launch_returned()
{
	u32 slot = 1;
	u64 *n = bpf_map_lookup_elem(&shared_counts, &slot);

	if (n)
		__atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
