// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * empty: an entry probe that does nothing. Injected into a kernel it must
 * cost nothing: ptxas inlines the call and removes it.
 */
#include "common.h"

SEC("gpu/entry/*")
int empty_entry(struct bpf2ptx_kernel_ctx *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
