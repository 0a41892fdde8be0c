// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Records that cross a ring's end (tests/gpu/ring_wrap.py sets the ring's positions just
 * before the end, then launches): `wrap_const` writes 16-byte records {id, ~id}, which the
 * compiler inlines (a known ring and size); `wrap_var` writes 16 or 24 bytes by the
 * thread id's parity, which goes through the runtime's bpf2ptx_ringbuf_output.
 * Build: clang -target bpf -O2 -g -mcpu=v3 -I/usr/include/x86_64-linux-gnu \
 *        -I../../../runtime-ptx/include -c ring_wrap.bpf.c -o ring_wrap.o
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 65536);
} ring_c SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 65536);
} ring_v SEC(".maps");

SEC("kprobe/wrap_const")
int wrap_const(void *ctx)
{
	__u64 rec[2];

	rec[0] = bpf2ptx_get_global_thread_id();
	rec[1] = ~rec[0];
	return bpf_ringbuf_output(&ring_c, rec, sizeof(rec), 0);
}

SEC("kprobe/wrap_var")
int wrap_var(void *ctx)
{
	__u64 rec[3];
	__u64 id = bpf2ptx_get_global_thread_id();

	rec[0] = id;
	rec[1] = ~id;
	rec[2] = id * 3;
	return bpf_ringbuf_output(&ring_v, rec, 16 + (id & 1) * 8, 0);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
