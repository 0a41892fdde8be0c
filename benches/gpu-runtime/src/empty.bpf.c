// SPDX-License-Identifier: MIT OR Apache-2.0
/* No operation: the cost of the --entry kernel itself (launch, call, result store). */
#include "common.h"

SEC("kprobe/empty")
int empty(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
