// SPDX-License-Identifier: MIT OR Apache-2.0
/* The launch-overhead benchmark's probe that matches no kernel: the interposer is loaded
 * and sees every launch but instruments nothing. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("gpu/entry/no_such_kernel")
int nomatch(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
