/* Counters written as plain code, as most published GPU probes write them (`*v += 1`
 * instead of `__sync_fetch_and_add`). Run by every thread, each load-add-store races
 * and loses almost every update; the verifier proves where one atomic add may replace
 * it (Facts::plain_add, specs/verifier.md "Plain counter updates"), and where not.
 *
 *   plain_entry  fused: `*v += 1` on an array only ever added to (sharded), `*h = *h + x`
 *                on a hash value (a register addend), `*w += x` on a 32-bit array value,
 *                `small -= 3` on a 32-bit global
 *   plain_exit   not fused: `x = *v; *v = x + 1; return x` uses the loaded value
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

struct sm_stats {
	__u64 calls;
	__u64 time;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct sm_stats);
} per_sm SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} lanes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} tickets SEC(".maps");

__u32 small;

SEC("gpu/entry/*")
int plain_entry(struct bpf2ptx_kernel_ctx *ctx)
{
	__u64 t = bpf_get_globaltimer();
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&hits, &k);
	struct sm_stats *s;
	__u32 *w;

	if (v)
		*v += 1;
	w = bpf_map_lookup_elem(&lanes, &k);
	if (w)
		*w += bpf_get_lane_id();
	k = bpf_get_sm_id();
	s = bpf_map_lookup_elem(&per_sm, &k);
	if (s) {
		s->calls += 1;
		s->time += t;
	}
	small -= 3;
	return 0;
}

/* Not fused: the loaded value is also the result; and clang loads `*v` before the
 * call of `*v = *v + bpf_get_globaltimer()`, so a helper call sits in between. */
SEC("gpu/exit/*")
int plain_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&tickets, &k);
	__u64 x;

	if (!v)
		return 0;
	x = *v;
	*v = x + 1;
	v = bpf_map_lookup_elem(&tickets, &k);
	if (v)
		*v = *v + bpf_get_globaltimer();
	return x;
}
char LICENSE[] SEC("license") = "Dual MIT/GPL";
