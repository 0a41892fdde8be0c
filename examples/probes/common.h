/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shared includes and small functions for the example probes. */
#ifndef EXAMPLES_COMMON_H
#define EXAMPLES_COMMON_H
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

/*
 * floor(log2(v)) for v > 0, 0 for v == 0: the log2 histogram bucket. One PTX
 * bfind (bpf2ptx_log2, helper 603) rather than the shift-and-compare cascade,
 * which costs about a dozen instructions at every site that runs it.
 */
static __always_inline __u32 log2_u64(__u64 v)
{
	return (__u32)bpf2ptx_log2(v);
}

/* Set bits of a 32-bit lane mask (bpf2ptx_get_active_mask), without a loop. */
static __always_inline __u32 popcount32(__u32 v)
{
	v = v - ((v >> 1) & 0x55555555);
	v = (v & 0x33333333) + ((v >> 2) & 0x33333333);
	return (((v + (v >> 4)) & 0x0f0f0f0f) * 0x01010101) >> 24;
}

/* Linear index of the calling thread's block in the grid. */
static __always_inline __u32 block_linear(void)
{
	__u64 bx, by, bz, gx, gy, gz;

	bpf_get_block_idx(&bx, &by, &bz);
	bpf_get_grid_dim(&gx, &gy, &gz);
	return (__u32)((bz * gy + by) * gx + bx);
}
#endif
