// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * big: a very long straight-line probe, for loader and verifier benchmarks.
 *
 * Some GPU users generate probes (one block of code per instrumented site)
 * and end up with a single program of tens of thousands of instructions.
 * This one mixes the thread's coordinates through 64 * BIG_GROUPS rounds of
 * integer arithmetic written out in straight-line code (no loop), storing
 * the state into an array map every fourth round. build.sh builds it with
 * the default 13 groups at -mcpu=v3 (> 10,000 instructions) and with 40
 * groups at -mcpu=v4, where the early exit has to jump over more than 32767
 * instructions (gotol).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

/* Rounds come in groups of 64; at most 40 groups. */
#ifndef BIG_GROUPS
#define BIG_GROUPS 13
#endif

const volatile __u64 seed = 0x9e3779b97f4a7c15ULL;
const volatile __u32 enabled = 1;

#ifdef BIG_GLOBALS
/* big_globals.bpf.c: the same code with its results in .bss and the clock as the only
 * helper, so that it lowers to PTX without the map runtime (the lowering benchmark). */
__u64 mix_out[64];
#define STORE(k, v) (mix_out[(k) & 63] = (v))
#else
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} mix SEC(".maps");
#define STORE(k, v) bpf_map_update_elem(&mix, &(k), &(v), BPF_ANY)
#endif

SEC("kprobe/_Z14generated_sitesPfPKfi")
int big_probe(void *ctx)
{
	__u64 tx, ty, tz, bx, by, bz;
	__u64 a, b, c;
	__u32 k;

#ifdef BIG_GLOBALS
	tx = bpf_ktime_get_ns();
	ty = tx >> 7;
	tz = tx >> 13;
	bx = tx >> 17;
	by = tx >> 23;
	bz = tx >> 29;
#else
	bpf_get_thread_idx(&tx, &ty, &tz);
	bpf_get_block_idx(&bx, &by, &bz);
#endif
	a = seed ^ (tx | (ty << 10) | (tz << 20));
	b = bx * 0x100000001b3ULL + (by << 16) + bz;
	c = a ^ b;
	if (!enabled || (c & 0xff) == 0xff)
		return 0;

	/* Macros, not a loop: clang 14 stops fully unrolling a loop this
	 * long, and the point is one straight-line block. */
#define ROUND(i)                                                   \
	do {                                                       \
		a = a * 0x100000001b3ULL + (__u64)(i);             \
		b ^= a >> ((i) % 29 + 3);                          \
		c += (b << 7) | (b >> 57);                         \
		a ^= c;                                            \
	} while (0)
#define ROUND4(i)                                                  \
	do {                                                       \
		ROUND(i);                                          \
		ROUND((i) + 1);                                    \
		ROUND((i) + 2);                                    \
		ROUND((i) + 3);                                    \
		k = (__u32)(((i) + 3) & 63);                       \
		STORE(k, c);                                       \
	} while (0)
#define ROUND16(i) ROUND4(i); ROUND4((i) + 4); ROUND4((i) + 8); ROUND4((i) + 12)
#define ROUND64(i) ROUND16(i); ROUND16((i) + 16); ROUND16((i) + 32); ROUND16((i) + 48)
#define GROUP(g) if ((g) < BIG_GROUPS) { ROUND64((g) * 64); }
#define GROUP8(g) GROUP(g) GROUP((g) + 1) GROUP((g) + 2) GROUP((g) + 3) \
	GROUP((g) + 4) GROUP((g) + 5) GROUP((g) + 6) GROUP((g) + 7)

	GROUP8(0)
	GROUP8(8)
	GROUP8(16)
	GROUP8(24)
	GROUP8(32)
	return (int)(a ^ b ^ c) & 1;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
