/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* bpf_printk with four and five arguments: libbpf's macro then calls bpf_trace_vprintk
 * (177) with the format in .rodata and the arguments in a u64 array on the stack, where
 * three or fewer call trace_printk (6). One thread of the launch prints, so the output
 * stays small. */
#define BPF_NO_GLOBAL_DATA
#include "bpftime_gpu.h"

SEC("kprobe/" VEC_ADD)
int cuda__print_enter()
{
	u64 tx, ty, tz, bx, by, bz;

	bpf_get_thread_idx(&tx, &ty, &tz);
	bpf_get_block_idx(&bx, &by, &bz);
	if (tx | ty | tz | bx | by | bz)
		return 0;
	bpf_printk("enter block=(%lu,%lu,%lu) sm=%lu\n", bx, by, bz, bpf_get_sm_id());
	return 0;
}

SEC("kretprobe/" VEC_ADD)
int cuda__print_exit()
{
	u64 tx, ty, tz, dx, dy, dz;

	bpf_get_thread_idx(&tx, &ty, &tz);
	if (tx | ty | tz)
		return 0;
	bpf_get_block_dim(&dx, &dy, &dz);
	bpf_printk("exit dim=(%lu,%lu,%lu) warp=%lu at=%lu\n", dx, dy, dz,
		   bpf_get_warp_id(), bpf_get_globaltimer());
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
