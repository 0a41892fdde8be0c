/* Fusion next to ring output (issue 19): `hits` is added to at every memory access
 * (accumulated in registers); the exit probe writes a ring record and adds to `sent`. A
 * probe that writes records is not fused (its add stays an atomic add), and the kernel's
 * accumulators reach `hits` before its site, so a host that reads a record and then the
 * maps sees every add made before the record. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sent SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} events SEC(".maps");

SEC("gpu/mem/*")
int count_access(struct bpf2ptx_mem_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&hits, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

SEC("gpu/exit.warp/*")
int record_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 k = 0;
	__u64 rec = bpf2ptx_get_global_thread_id();
	__u64 *v = bpf_map_lookup_elem(&sent, &k);

	bpf_ringbuf_output(&events, &rec, sizeof(rec), 0);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
