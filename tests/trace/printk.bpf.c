// SPDX-License-Identifier: MIT OR Apache-2.0
/* The interposer tests' GPU printk and loop budget: one probe that prints a line and runs
 * a loop (so that, traced under a loop budget, its module has a loop-budget counter). The
 * fake driver acts it out (cli/interposer/tests/fake/libcuda.c, run_probes). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct bpf2ptx_kernel_ctx;

SEC("gpu/entry/_Z9vectorAddPKfS0_Pf")
int on_entry(struct bpf2ptx_kernel_ctx *ctx)
{
	__u64 n = 0, end = bpf_get_globaltimer() + 1000;

	/* No bound the verifier can prove: it runs under the loop budget only. */
	while (bpf_get_globaltimer() < end)
		n++;
	bpf_printk("hello %d", (int)n);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
