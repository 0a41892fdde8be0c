// SPDX-License-Identifier: MIT OR Apache-2.0
// Write to a read-only map: a `const volatile` global lives in .rodata, which the
// program may only read.
// expect: rodata-write; names: `sample_every`; value: a pointer to `sample_every`; help: drop `const` to make it writable
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

const volatile __u32 sample_every = 32;
__u64 samples;

SEC("gpu/entry/*")
int sample(struct bpf2ptx_kernel_ctx *ctx)
{
	if (bpf_get_lane_id() % sample_every == 0)
		__sync_fetch_and_add(&samples, 1);
	/* adapt the rate: not allowed, sample_every is read-only */
	*(volatile __u32 *)&sample_every = sample_every * 2;
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
