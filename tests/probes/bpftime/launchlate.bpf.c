/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The shape of bpftime's launchlate example (example/gpu/launchlate): a uprobe on
 * cudaLaunchKernel (its C++ instantiation, as bpftime names it) that reads the launch's
 * arguments with BPF_KPROBE, the host time and the pid, and prints them; a GPU entry
 * probe on the vector add. Here the host program also keeps what it saw in a GPU array
 * the probe reads, so `bpf2ptx trace` tests can check both sides: the map lives in
 * pinned host memory shared with the GPU. */
#define BPF_NO_GLOBAL_DATA
#include "bpftime_gpu.h"

/* vmlinux.h's x86-64 struct pt_regs, which libbpf's BPF_KPROBE reads on x86. */
#define __VMLINUX_H__
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di;
	unsigned long orig_ax, ip, cs, flags, sp, ss;
};
#include <bpf/bpf_tracing.h>

struct seen {
	u64 calls;
	u64 grid;	/* gridDim as cudaLaunchKernel passes it: x | y << 32 */
	u64 block;	/* blockDim: x | y << 32 */
	u64 ts;		/* bpf_ktime_get_ns() at the last call */
	u64 pid;
};

struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct seen);
} host_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} gpu_saw_calls SEC(".maps");

SEC("uprobe/example/gpu/launchlate/vec_add:_Z16cudaLaunchKernelIcE9cudaErrorPT_4dim3S3_PPvmP11CUstream_st")
int BPF_KPROBE(uprobe_cuda_launch, const void *func, u64 gridDim, u64 blockDim)
{
	u64 ts = bpf_ktime_get_ns();
	u32 pid = bpf_get_current_pid_tgid() >> 32;
	u32 zero = 0;
	struct seen *s = bpf_map_lookup_elem(&host_seen, &zero);

	if (s) {
		s->calls++;
		s->grid = gridDim;
		s->block = blockDim;
		s->ts = ts;
		s->pid = pid;
	}
	bpf_printk("CPU: cudaLaunchKernel called at ts=%lu ns, pid=%u\n", ts, pid);
	return 0;
}

SEC("kprobe/" VEC_ADD)
int cuda__probe()
{
	u32 zero = 0;
	struct seen *s = bpf_map_lookup_elem(&host_seen, &zero);
	u64 *g = bpf_map_lookup_elem(&gpu_saw_calls, &zero);

	if (s && g)
		*g = s->calls;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
