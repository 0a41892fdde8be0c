// SPDX-License-Identifier: MIT OR Apache-2.0
// Read past the context: an entry probe's context is struct bpf2ptx_kernel_ctx (8 bytes),
// not the 24-byte struct bpf2ptx_mem_ctx of a memory-access probe.
// expect: mem-bounds; names: the context; value: offset 8; help: context is 8 bytes
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} bytes SEC(".maps");

SEC("gpu/entry/*")
int access_size(struct bpf2ptx_mem_ctx *ctx)
{
	__u32 size = ctx->size;
	__u64 one = 1;

	bpf_map_update_elem(&bytes, &size, &one, BPF_NOEXIST);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
