// SPDX-License-Identifier: MIT OR Apache-2.0
/* The matched empty probe of the launch-overhead benchmark: at the entry of `tiny`, do
 * nothing. What it costs per launch is the interposer's, not the probe's. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("gpu/entry/tiny")
int empty_entry(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
