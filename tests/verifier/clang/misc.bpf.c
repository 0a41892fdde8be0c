// SPDX-License-Identifier: MIT
// Maps, ringbuf, globals, subprograms and printk as clang -O2 emits them, with standard
// Linux helpers only: each program is safe and must be accepted. See build.sh.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct key {
	__u32 sm;
	__u32 kind;
	__u64 tag;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct key);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} events SEC(".maps");

struct event {
	__u64 ts;
	__u32 cpu;
	__u32 pad;
	char name[16];
};

const volatile __u64 sample_every = 4;
const char label[] = "probe";
__u64 hits;
__u64 last_ts;

/* A struct key built on the stack, update or increment. */
SEC("kprobe/count")
int count(void *ctx)
{
	struct key k = {};
	__u64 one = 1, *v;

	k.sm = bpf_get_smp_processor_id();
	k.kind = 2;
	k.tag = bpf_get_current_pid_tgid();
	v = bpf_map_lookup_elem(&counts, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		bpf_map_update_elem(&counts, &k, &one, BPF_NOEXIST);
	return 0;
}

/* Reserve, fill (including a bounded string copy), submit or discard. */
SEC("kprobe/emit")
int emit(void *ctx)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e)
		return 0;
	e->ts = bpf_ktime_get_ns();
	e->cpu = bpf_get_smp_processor_id();
	e->pad = 0;
	for (int i = 0; i < (int)sizeof(label) && i < 16; i++)
		e->name[i] = label[i];
	if (e->ts % sample_every) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static __attribute__((noinline)) int fill(__u64 *out, int n)
{
	__u64 x = 0;

	for (int i = 0; i < n && i < 8; i++)
		x = x * 31 + i;
	*out = x;
	return n > 8;
}

/* A subprogram writing through a pointer into the caller's stack. */
SEC("kprobe/subprog")
int subprog(void *ctx)
{
	__u64 v = 0;
	int over = fill(&v, 5);

	__sync_fetch_and_add(&hits, v + over);
	return 0;
}

/* Global data: .bss counters, a .data timestamp, a .rodata knob. */
SEC("kprobe/globals")
int globals(void *ctx)
{
	__u64 now = bpf_ktime_get_ns();

	if (now - last_ts > sample_every * 1000)
		last_ts = now;
	hits++;
	return 0;
}

/* bpf_printk with a format in .rodata and two arguments. */
SEC("kprobe/printk")
int printk(void *ctx)
{
	bpf_printk("cpu %d hits %llu", bpf_get_smp_processor_id(), hits);
	return 0;
}

/* Copy one ringbuf event into another through the stack. */
SEC("kprobe/output")
int output(void *ctx)
{
	struct event e = {};

	e.ts = bpf_ktime_get_ns();
	bpf_ringbuf_output(&events, &e, sizeof(e), 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
