// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The map definitions behind the `bpf2ptx trace` snapshot fixtures
 * (tests/trace/snapshots/): one map of every kind the device runtime lays
 * out, with BTF key and value types (ints, a struct with a bitfield and an enum, a
 * struct key), a legacy map without BTF, and a histogram marked by a decl tag.
 * Only the definitions matter: the fixtures hold the maps' raw bytes.
 * Rebuild with `bash tests/trace/build.sh` (clang 14).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

enum mode { MODE_READ = 1, MODE_WRITE = 2 };

struct stats {
	__u64 calls;
	__u32 bytes;
	__u32 kind : 3;
	__s32 delta : 5;
	enum mode mode;
};

struct who {
	__u32 block;
	__u32 sm;
};

struct event {
	__u64 ts;
	__u32 block;
	__u32 sm;
};

#define MAP(name, t, k, v, n)                                                  \
	struct {                                                               \
		__uint(type, t);                                               \
		__uint(max_entries, n);                                        \
		__type(key, k);                                                \
		__type(value, v);                                              \
	} name SEC(".maps")

MAP(counts, BPF_MAP_TYPE_ARRAY, __u32, __u64, 16);
MAP(stats, BPF_MAP_TYPE_GPU_ARRAY_MAP, __u32, struct stats, 4);
MAP(per_sm, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u64, 4);
MAP(per_thread, BPF_MAP_TYPE_PERTHREAD_ARRAY_MAP, __u32, __u32, 2);
MAP(per_warp, BPF_MAP_TYPE_PERWARP_ARRAY_MAP, __u32, struct stats, 2);
MAP(by_who, BPF_MAP_TYPE_HASH, struct who, __u64, 8);
MAP(recent, BPF_MAP_TYPE_LRU_HASH, __u64, __s64, 4);
MAP(by_block, BPF_MAP_TYPE_GPU_HASH_MAP, __u32, struct stats, 4);
MAP(sizes, BPF_MAP_TYPE_ARRAY, __u32, __u64, 12);
MAP(warp_lat, BPF_MAP_TYPE_PERWARP_ARRAY_MAP, __u32, __u32, 64);
MAP(empty, BPF_MAP_TYPE_ARRAY, __u32, __u64, 8);

/* Key i counts latencies in [2^i, 2^(i+1)) ns: printed as a log2 histogram. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} lat SEC(".maps") __attribute__((btf_decl_tag("bpf2ptx:hist=log2")));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_GPU_RINGBUF_MAP);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct event);
} gpu_events SEC(".maps");

/* libbpf's legacy definition: no BTF types, printed in hex. */
struct bpf_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	unsigned int map_flags;
};
struct bpf_map_def SEC("maps") legacy = {
	.type = BPF_MAP_TYPE_HASH,
	.key_size = 4,
	.value_size = 8,
	.max_entries = 4,
};

SEC("gpu/entry/k")
int probe(void *ctx)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&counts, &zero);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
