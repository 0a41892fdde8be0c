/* Fusion must leave a map alone when a probe reads it (issue 19): `hist` is added to at
 * every memory access and read at every exit, so its adds stay atomic adds at their sites;
 * `total`, only ever added to (at every memory access too, so in a kernel's loops), is
 * still accumulated in registers. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} total SEC(".maps");

SEC("gpu/mem/*")
int count_access(struct bpf2ptx_mem_ctx *ctx)
{
	__u32 k = 2;
	__u64 *v = bpf_map_lookup_elem(&hist, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

SEC("gpu/mem/*")
int count_total(struct bpf2ptx_mem_ctx *ctx)
{
	__u32 z = 0;
	__u64 *t = bpf_map_lookup_elem(&total, &z);

	if (t)
		__sync_fetch_and_add(t, 1);
	return 0;
}

SEC("gpu/exit/*")
int read_hist(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 k = 2, z = 0;
	__u64 *v = bpf_map_lookup_elem(&hist, &k);
	__u64 *t = bpf_map_lookup_elem(&total, &z);

	if (v && t)
		__sync_fetch_and_add(t, *v & 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
