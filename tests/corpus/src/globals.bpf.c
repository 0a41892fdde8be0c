// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * globals: a sampling probe configured through global variables.
 *
 * A GPU user loads this, sets the `const volatile` knobs in .rodata from the
 * host (which SM to watch, sampling period, verbosity), and reads the
 * results back from .bss/.data without any map lookups. The sampling period
 * lives in .data so the host can change it while the kernel runs. The
 * string passed to bpf_puts lands in .rodata.str1.1.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

/* .rodata: set by the host before load, constant afterwards. */
const volatile __u32 watch_sm = 0xffffffff;	/* all SMs */
const volatile signed char verbosity = -1;	/* < 0: quiet */
const volatile short bias_ns = -250;		/* timer calibration */

/* .data: initialised, writable by host and probe. */
__u64 sample_every = 64;
long long drift_sum = 0x100;

/* .bss: zero-initialised results. */
__u64 events_seen;
__u64 events_sampled;
long long last_avg_ns;
__u64 per_lane[32];

SEC("kprobe/_Z4saxpyifPfS_")
int sample_saxpy(void *ctx)
{
	__u64 sm = bpf_get_sm_id();
	__u64 lane = bpf_get_lane_id();
	__u64 n;
	long long t;

	if (watch_sm != 0xffffffff && sm != watch_sm)
		return 0;
	n = __sync_fetch_and_add(&events_seen, 1);
	if (sample_every == 0 || n % sample_every != 0)
		return 0;

	events_sampled++;
	per_lane[lane & 31]++;
	t = (long long)bpf_get_globaltimer() + bias_ns;
	drift_sum += t & 0xffff;
	last_avg_ns = drift_sum / (long long)(events_sampled + 1);
	if (verbosity > 0)
		bpf_puts("globals: sampled one saxpy call\n");
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
