/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* bpf_snprintf (165): the probe formats a line into its own stack buffer from a .rodata
 * format and a u64 argument array, then sends the text through a GPU ringbuf (1527) with
 * perf_event_output and a NULL context, as bpftime's examples send events. (puts (501)
 * takes only a constant string in bpf2ptx: its printk record holds the string's address
 * for the host to read, which a stack buffer does not have.) Only thread (0,0,0) of each
 * block formats. */
#define BPF_NO_GLOBAL_DATA
#include "bpftime_gpu.h"

struct {
	__uint(type, BPF_MAP_TYPE_GPU_RINGBUF_MAP);
	__uint(max_entries, 16);
	__type(key, u32);
	__type(value, char[96]);
} lines SEC(".maps");

SEC("kretprobe/" VEC_ADD)
int cuda__format_exit()
{
	static const char fmt[] = "block %llu on sm %llu lane %llu done at %llu";
	u64 tx, ty, tz, bx, by, bz;
	u64 args[4];
	char line[96];
	long n;

	bpf_get_thread_idx(&tx, &ty, &tz);
	if (tx | ty | tz)
		return 0;
	bpf_get_block_idx(&bx, &by, &bz);
	args[0] = bx;
	args[1] = bpf_get_sm_id();
	args[2] = bpf_get_lane_id();
	args[3] = bpf_get_globaltimer();
	n = bpf_snprintf(line, sizeof(line), fmt, args, sizeof(args));
	if (n > 0)
		bpf_perf_event_output(NULL, &lines, 0, line, sizeof(line));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
