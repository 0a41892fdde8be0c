// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * launch_stamp: the simplest useful probe — stamp every kernel entry with the GPU's
 * global timer and fold it into a running signature, using only global data and the
 * standard ktime helper, so it lowers to PTX without the map runtime.
 *
 * A GPU user reads `.bss` after the kernel: `first_ns`/`last_ns` bracket the launch,
 * `entries` counts probe hits, `signature` is an order-independent digest of the stamps
 * mixed with a per-build salt from `.rodata`. The mixing function is a bpf-to-bpf call
 * with a bounded loop, as hash-based sampling probes use.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

const volatile __u64 salt = 0x9e3779b97f4a7c15ULL;
const volatile __u32 rounds = 4;

__u64 first_ns;
__u64 last_ns;
__u64 entries;
__u64 signature;

static __noinline __u64 mix(__u64 x)
{
	for (__u32 i = 0; i < 8; i++) {
		if (i >= rounds)
			break;
		x ^= x >> 31;
		x *= salt;
		x ^= x >> 29;
	}
	return x;
}

SEC("kprobe/_Z6vecAddPKfS0_Pfi")
int stamp_entry(void *ctx)
{
	__u64 now = bpf_ktime_get_ns();

	if (first_ns == 0 || now < first_ns)
		first_ns = now;
	if (now > last_ns)
		last_ns = now;
	__sync_fetch_and_add(&entries, 1);
	__sync_fetch_and_xor(&signature, mix(now));
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
