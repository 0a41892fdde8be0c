// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * signed_ops: clock skew between SMs, exported as big-endian records.
 *
 * A GPU user runs this to check whether %globaltimer agrees across SMs
 * (and to calibrate cross-SM timelines). Each exit compares the timer with
 * the reference that the first thread on the SM stored, scales the signed
 * difference, and sends a big-endian record (for a network collector) to a
 * ring buffer. Built for -mcpu=v4 only: it relies on signed division and
 * modulo, sign-extending loads and moves, and byte swaps.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

#define MAX_SMS 256

/* written by the host into the first array slot */
struct skew_cfg {
	signed char shift;	/* extra right shift of the result, may be < 0 */
	short offset_ns;	/* per-device calibration */
	int scale;		/* divide the delta by this (signed) */
};

struct sm_ref {
	long long ref_ns;
	int last_delta;
	short buckets_hit;
	signed char last_bucket;
	signed char pad;
};

struct skew_record {
	__u64 delta_be;
	__u32 sm_be;
	__u16 bucket_be;
	__u16 magic_be;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct skew_cfg);
} cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_GPU_ARRAY_MAP);
	__uint(max_entries, MAX_SMS);
	__type(key, __u32);
	__type(value, struct sm_ref);
} refs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} out SEC(".maps");

SEC("kretprobe/_Z15all_reduce_ringPfS_ii")
int skew_exit(void *ctx)
{
	__u32 zero = 0, sm = (__u32)bpf_get_sm_id() % MAX_SMS;
	struct skew_cfg *c = bpf_map_lookup_elem(&cfg, &zero);
	struct sm_ref *r = bpf_map_lookup_elem(&refs, &sm);
	struct skew_record rec;
	long long now, d;
	signed char bucket;
	int small;

	if (!c || !r)
		return 0;
	now = (long long)bpf_get_globaltimer() + c->offset_ns;
	if (r->ref_ns == 0) {
		r->ref_ns = now;
		return 0;
	}
	d = now - r->ref_ns;
	if (c->scale != 0)
		d /= c->scale;
	if (c->shift > 0)
		d >>= c->shift;
	else if (c->shift < 0)
		d <<= -c->shift;

	/* signed bucket -15..15 and a truncated copy of the delta */
	bucket = (signed char)(d % 16);
	small = (int)(short)d;
	r->last_delta = small;
	r->last_bucket = bucket;
	r->buckets_hit += (short)((int)bucket - r->last_bucket + 1);

	rec.delta_be = __builtin_bswap64((__u64)d);
	rec.sm_be = __builtin_bswap32(sm);
	rec.bucket_be = __builtin_bswap16((__u16)(short)bucket);
	rec.magic_be = __builtin_bswap16(0x5a17);
	bpf_ringbuf_output(&out, &rec, sizeof(rec), 0);
	return (int)(d % 7) / 2;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
