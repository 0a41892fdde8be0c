/* __ksym externs: a typed kernel variable, a typeless one and kfuncs (the numeric
 * open-coded iterator, as bpf_for() in libbpf's bpf_helpers.h expands). */
#include "odd.h"

struct bpf_iter_num {
	__u64 __opaque[1];
} __attribute__((aligned(8)));

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

extern const int bpf_prog_active __ksym;
extern const void jiffies_64 __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} out SEC(".maps");

SEC("gpu/entry/vecadd")
int iter_sum(void *ctx)
{
	struct bpf_iter_num it;
	__u64 sum = 0;
	__u32 key = 0;
	int *v;

	bpf_iter_num_new(&it, 0, 10);
	while ((v = bpf_iter_num_next(&it)))
		sum += *v;
	bpf_iter_num_destroy(&it);
	bpf_map_update_elem(&out, &key, &sum, 0);
	return 0;
}

SEC("gpu/exit/vecadd")
int read_ksym(void *ctx)
{
	__u32 key = 1;
	__u64 v = bpf_prog_active + (__u64)&jiffies_64;
	bpf_map_update_elem(&out, &key, &v, 0);
	return 0;
}

char __license[] SEC("license") = "GPL";
