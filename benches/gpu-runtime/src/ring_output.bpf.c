// SPDX-License-Identifier: MIT OR Apache-2.0
/* One ringbuf record per thread: bpf_ringbuf_output of 16 bytes {id, ~id}. */
#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 128 * 1024 * 1024);
} ring SEC(".maps");

SEC("kprobe/ring_output")
int ring_output(void *ctx)
{
	__u64 rec[2];

	rec[0] = bpf2ptx_get_global_thread_id();
	rec[1] = ~rec[0];
	bpf_ringbuf_output(&ring, rec, sizeof(rec), 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
