// SPDX-License-Identifier: MIT OR Apache-2.0
// Off-by-one index: `<=` lets the index reach the array's length, one past its end.
// expect: mem-bounds; names: `counts`; value: index may be 0..256; help: `<` instead of `<=`
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

__u64 counts[256];

SEC("gpu/exit/*")
int count_sm(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 sm = bpf_get_sm_id();

	if (sm <= 256)
		__sync_fetch_and_add(&counts[sm], 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
