// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * big: a very long straight-line probe, for loader and verifier benchmarks.
 *
 * Some GPU users generate probes (one block of code per instrumented site)
 * and end up with a single program of tens of thousands of instructions.
 * This one mixes the thread's coordinates through BIG_ROUNDS fully unrolled
 * rounds of integer arithmetic, storing the state into an array map every
 * fourth round. build.sh builds it with the default rounds at -mcpu=v3
 * (> 10,000 instructions) and with more rounds at -mcpu=v4, where the
 * early exit has to jump over more than 32767 instructions (gotol).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

#ifndef BIG_ROUNDS
#define BIG_ROUNDS 832
#endif

const volatile __u64 seed = 0x9e3779b97f4a7c15ULL;
const volatile __u32 enabled = 1;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} mix SEC(".maps");

SEC("kprobe/_Z14generated_sitesPfPKfi")
int big_probe(void *ctx)
{
	__u64 tx, ty, tz, bx, by, bz;
	__u64 a, b, c;
	__u32 k;

	bpf_get_thread_idx(&tx, &ty, &tz);
	bpf_get_block_idx(&bx, &by, &bz);
	a = seed ^ (tx | (ty << 10) | (tz << 20));
	b = bx * 0x100000001b3ULL + (by << 16) + bz;
	c = a ^ b;
	if (!enabled || (c & 0xff) == 0xff)
		return 0;

#pragma clang loop unroll(full)
	for (int i = 0; i < BIG_ROUNDS; i++) {
		a = a * 0x100000001b3ULL + (__u64)i;
		b ^= a >> (i % 29 + 3);
		c += (b << 7) | (b >> 57);
		a ^= c;
		if ((i & 3) == 3) {
			k = (__u32)(i & 63);
			bpf_map_update_elem(&mix, &k, &c, BPF_ANY);
		}
	}
	return (int)(a ^ b ^ c) & 1;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
