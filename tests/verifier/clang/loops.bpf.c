// SPDX-License-Identifier: MIT
// Loops as clang -O2 emits them, with standard Linux helpers only: each program is safe
// and must be accepted (tests/tests/verifier_kernel.rs checks that, and compares with the
// Linux verifier). See tests/verifier/clang/build.sh.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} vals SEC(".maps");

struct cfg {
	__u32 n;
	__u32 shift;
	__u64 table[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cfg);
} config SEC(".maps");

/* A constant bound, with a lookup each iteration. */
SEC("kprobe/constant_bound")
int constant_bound(void *ctx)
{
	__u64 sum = 0;

	for (__u32 i = 0; i < 16; i++) {
		__u64 *v = bpf_map_lookup_elem(&vals, &i);

		if (v)
			sum += *v;
	}
	return sum & 0xff;
}

/* A bound read from a map and clamped first. */
SEC("kprobe/clamped_bound")
int clamped_bound(void *ctx)
{
	__u32 zero = 0;
	struct cfg *c = bpf_map_lookup_elem(&config, &zero);
	__u64 sum = 0;

	if (!c)
		return 0;
	__u32 n = c->n;
	if (n > 16)
		n = 16;
	for (__u32 i = 0; i < n; i++)
		sum += c->table[i];
	return sum & 0xff;
}

/* Nested loops over a 2-D index into a map value. */
SEC("kprobe/nested")
int nested(void *ctx)
{
	__u32 zero = 0;
	struct cfg *c = bpf_map_lookup_elem(&config, &zero);
	__u64 acc = 0;

	if (!c)
		return 0;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			acc += c->table[i * 4 + j] << (j & 3);
	c->table[0] = acc;
	return 0;
}

/* A search that leaves early. */
SEC("kprobe/early_exit")
int early_exit(void *ctx)
{
	__u32 zero = 0;
	struct cfg *c = bpf_map_lookup_elem(&config, &zero);
	int found = -1;

	if (!c)
		return 0;
	for (int i = 0; i < 16; i++) {
		if (c->table[i] == c->shift) {
			found = i;
			break;
		}
	}
	return found;
}

/* A while loop whose bound is masked. */
SEC("kprobe/masked_while")
int masked_while(void *ctx)
{
	__u32 zero = 0;
	struct cfg *c = bpf_map_lookup_elem(&config, &zero);
	__u64 x = 0;

	if (!c)
		return 0;
	__u32 n = c->shift & 15;
	__u32 i = 0;
	while (i < n) {
		x ^= c->table[i];
		i++;
	}
	c->table[15] = x;
	return 0;
}

/* An unrolled loop. */
SEC("kprobe/unrolled")
int unrolled(void *ctx)
{
	__u32 zero = 0;
	struct cfg *c = bpf_map_lookup_elem(&config, &zero);
	__u64 x = 0;

	if (!c)
		return 0;
#pragma clang loop unroll(full)
	for (int i = 0; i < 8; i++)
		x += c->table[i] * (i + 1);
	c->table[8] = x;
	return 0;
}

/* Log2 bucket of a time difference, a histogram classic. */
SEC("kprobe/log2_hist")
int log2_hist(void *ctx)
{
	__u64 d = bpf_ktime_get_ns();
	__u32 slot = 0;

	for (int i = 0; i < 63 && d > 1; i++) {
		d >>= 1;
		slot++;
	}
	if (slot > 63)
		slot = 63;
	__u64 *v = bpf_map_lookup_elem(&vals, &slot);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
