// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * Per-warp (1600) and per-SM (per-CPU array, 6) maps, checked by tests/gpu/per_unit.py.
 * Every thread adds 1 and its global thread id to its warp's slots 0 and 1 of `pw`, adds
 * 1 to its SM's slot 0 of `psm` and stores its SM id + 1 in its SM's slot 1 (a plain
 * store: the per-SM copy is the SM's own).
 * Build: clang -target bpf -O2 -g -mcpu=v3 -I/usr/include/x86_64-linux-gnu \
 *        -I../../../runtime-ptx/include -c per_unit.bpf.c -o per_unit.o
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERWARP_ARRAY_MAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} pw SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} psm SEC(".maps");

SEC("kprobe/per_unit")
int per_unit(void *ctx)
{
	__u32 k0 = 0, k1 = 1;
	__u64 id = bpf2ptx_get_global_thread_id();
	__u64 *v;

	v = bpf_map_lookup_elem(&pw, &k0);
	if (v)
		__sync_fetch_and_add(v, 1);
	v = bpf_map_lookup_elem(&pw, &k1);
	if (v)
		__sync_fetch_and_add(v, id);
	v = bpf_map_lookup_elem(&psm, &k0);
	if (v)
		__sync_fetch_and_add(v, 1);
	v = bpf_map_lookup_elem(&psm, &k1);
	if (v)
		*v = bpf_get_smp_processor_id() + 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
