// SPDX-License-Identifier: MIT
// More clang -O2 patterns with standard Linux helpers only: each program is safe and must
// be accepted. See build.sh.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define SLOTS 32

struct stats {
	__u32 count;
	__u32 next;
	__u64 samples[SLOTS];
	char tag[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, struct stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, __u32);
} index_of SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} rb SEC(".maps");

/* A ring of samples: the write position comes from the value and is masked. */
SEC("kprobe/ring_insert")
int ring_insert(void *ctx)
{
	__u32 k = bpf_get_smp_processor_id() & 7;
	struct stats *s = bpf_map_lookup_elem(&stats, &k);

	if (!s)
		return 0;
	__u32 pos = s->next % SLOTS;
	s->samples[pos] = bpf_ktime_get_ns();
	s->next = pos + 1;
	__sync_fetch_and_add(&s->count, 1);
	return 0;
}

/* A key looked up in one map names the value to use in another. */
SEC("kprobe/two_level")
int two_level(void *ctx)
{
	__u64 key = bpf_get_current_pid_tgid();
	__u32 *idx = bpf_map_lookup_elem(&index_of, &key);

	if (!idx)
		return 0;
	struct stats *s = bpf_map_lookup_elem(&stats, idx);
	if (!s)
		return 0;
	if (s->count < SLOTS)
		s->samples[s->count] = key;
	return 0;
}

/* A bounded search with a 32-bit index and two exits. */
SEC("kprobe/search")
int search(void *ctx)
{
	__u32 k = 0;
	struct stats *s = bpf_map_lookup_elem(&stats, &k);

	if (!s)
		return -1;
	__u64 want = s->samples[0];
	for (__u32 i = 1; i < SLOTS; i++) {
		if (s->samples[i] == want)
			return i;
		if (s->samples[i] == 0)
			break;
	}
	return -1;
}

/* A switch clang turns into a chain of compares. */
SEC("kprobe/classify")
int classify(void *ctx)
{
	__u64 t = bpf_ktime_get_ns();
	__u32 k;

	switch (t & 7) {
	case 0: k = 3; break;
	case 1: k = 1; break;
	case 2:
	case 3: k = 4; break;
	case 5: k = 7; break;
	default: k = 0;
	}
	struct stats *s = bpf_map_lookup_elem(&stats, &k);
	if (s)
		__sync_fetch_and_add(&s->count, 1);
	return 0;
}

/* A zeroed stack buffer, filled in a loop, then copied into the ringbuf. */
SEC("kprobe/buffer")
int buffer(void *ctx)
{
	char buf[64];

	__builtin_memset(buf, 0, sizeof(buf));
	for (int i = 0; i < 48; i++)
		buf[i] = 'a' + (i % 26);
	bpf_ringbuf_output(&rb, buf, sizeof(buf), 0);
	return 0;
}

/* A long counted loop (256 iterations) with a branch in its body. */
SEC("kprobe/long_loop")
int long_loop(void *ctx)
{
	__u64 x = bpf_ktime_get_ns(), acc = 0;

#pragma clang loop unroll(disable)
	for (int i = 0; i < 256; i++) {
		if (x & 1)
			acc += i;
		else
			acc ^= x;
		x = (x >> 1) | (x << 63);
	}
	return acc & 1;
}

/* Nested loops whose counters have their address taken (they live on the stack). */
SEC("kprobe/stack_counters")
int stack_counters(void *ctx)
{
	__u64 total = 0;

	for (__u32 i = 0; i < 4; i++) {
		struct stats *s = bpf_map_lookup_elem(&stats, &i);

		if (!s)
			continue;
		for (__u32 j = 0; j < 8; j++)
			total += s->samples[j];
	}
	return total & 0xff;
}

/* A copy of the tag string, stopping at the NUL. */
SEC("kprobe/strcopy")
int strcopy(void *ctx)
{
	__u32 k = 0;
	struct stats *s = bpf_map_lookup_elem(&stats, &k);
	struct stats *d;

	if (!s)
		return 0;
	k = 1;
	d = bpf_map_lookup_elem(&stats, &k);
	if (!d)
		return 0;
	for (int i = 0; i < 16; i++) {
		d->tag[i] = s->tag[i];
		if (!s->tag[i])
			break;
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
