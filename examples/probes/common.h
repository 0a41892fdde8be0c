/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shared includes and a branch-free log2 for the example probes. */
#ifndef EXAMPLES_COMMON_H
#define EXAMPLES_COMMON_H
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

/* floor(log2(v)) for v > 0, 0 for v == 0; no loop, so no verifier work. */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}
#endif
