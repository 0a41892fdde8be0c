// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * hist_log2: log2 histogram of per-thread kernel duration.
 *
 * A GPU user runs this to see the distribution of how long threads stay in
 * a kernel (bimodal = divergence, long tail = memory stalls). Each thread
 * keeps its own start time in a per-thread array; at exit the duration,
 * in units of `unit_ns` (set by the host before load), goes into one of 64
 * log2 buckets of a shared array. The bucket search is a bounded loop that
 * is kept as a real loop (unrolling disabled), so the object has a back edge.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

#define NR_BUCKETS 64

/* Host sets the unit before load; a negative value means "raw ns". */
const volatile int unit_ns = 1;

struct {
	__uint(type, BPF_MAP_TYPE_PERTHREAD_ARRAY_MAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} thread_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NR_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

SEC("kprobe/_Z11stencil_3dPKfPfiii")
int hist_enter(void *ctx)
{
	__u32 zero = 0;
	__u64 *start = bpf_map_lookup_elem(&thread_start, &zero);

	if (start)
		*start = bpf_get_globaltimer();
	return 0;
}

SEC("kretprobe/_Z11stencil_3dPKfPfiii")
int hist_exit(void *ctx)
{
	__u32 zero = 0, slot = 0;
	__u64 *start, *bucket, v;
	int i;

	start = bpf_map_lookup_elem(&thread_start, &zero);
	if (!start || *start == 0)
		return 0;
#ifdef __BPF_FEATURE_SDIV_SMOD
	/* v4 has signed division: a clock that went backwards stays negative
	 * through the scaling and is dropped below. */
	{
		long long d = (long long)(bpf_get_globaltimer() - *start);

		if (unit_ns > 0)
			d /= unit_ns;
		if (d < 0)
			return 0;
		v = d;
	}
#else
	v = bpf_get_globaltimer() - *start;
	if ((long long)v < 0)
		return 0;
	if (unit_ns > 0)
		v /= (__u32)unit_ns;
#endif

#pragma clang loop unroll(disable)
	for (i = 0; i < NR_BUCKETS - 1; i++) {
		v >>= 1;
		if (v == 0)
			break;
		slot++;
	}

	bucket = bpf_map_lookup_elem(&hist, &slot);
	if (bucket)
		__sync_fetch_and_add(bucket, 1);
	*start = 0;
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
