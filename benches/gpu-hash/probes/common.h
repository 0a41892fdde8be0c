/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shared includes, map definition shorthands and a branch-free log2 for the hash-map
 * benchmark probes (benches/gpu-hash). */
#ifndef GPU_HASH_COMMON_H
#define GPU_HASH_COMMON_H
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

/* A map of u32 keys and u64 values. */
#define U32_U64_MAP(name, map_type, entries)     \
	struct {                                 \
		__uint(type, map_type);          \
		__uint(max_entries, entries);    \
		__type(key, __u32);              \
		__type(value, __u64);            \
	} name SEC(".maps")

/* A bijective scramble of an id (odd multiplier mod 2^32): FNV-1a maps consecutive ids
 * (up to 2^22 of them) to distinct home slots, so keys that are plain thread ids never
 * collide; scrambled ones collide as random keys do (about 1.25 probes at load 1/2). */
#define MIX_KEY(id) ((__u32)(id) * 0x9E3779B1u)

/* The value the benchmark's inserting probes store for key k (bench.py checks it). */
#define VALUE_OF(k) ((__u64)(k) * 0x9E3779B97F4A7C15ull + 1)

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
