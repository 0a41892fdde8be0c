/* warp_time's shape with a value that does not depend on time, so forwarding can be
 * checked exactly (issue 19): at entry one lane per warp stores `gtid * 3 + 1` to
 * `fw_start[gtid >> 5]`; at exit it loads the slot back (fused: from the register the
 * entry's store filled) and counts `(value ^ warp) & 63` in `fw_hist`. For a launch of
 * whole warps the histogram is a function of the warp count alone; the CPU tests
 * (tests/tests/fuse.rs) and the GPU benchmark (benches/gpu/fuse.py) compute it. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 20);
	__type(key, __u32);
	__type(value, __u64);
} fw_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} fw_hist SEC(".maps");

SEC("gpu/entry.warp/*")
int fw_enter(struct bpf2ptx_kernel_ctx *ctx)
{
	__u64 g = bpf2ptx_get_global_thread_id();
	__u32 w = (__u32)(g >> 5);
	__u64 *s = bpf_map_lookup_elem(&fw_start, &w);

	if (s)
		*s = g * 3 + 1;
	return 0;
}

SEC("gpu/exit.warp/*")
int fw_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	__u64 g = bpf2ptx_get_global_thread_id();
	__u32 w = (__u32)(g >> 5);
	__u64 *s = bpf_map_lookup_elem(&fw_start, &w);
	__u64 *h;
	__u32 b;

	if (!s)
		return 0;
	b = (__u32)((*s ^ w) & 63);
	h = bpf_map_lookup_elem(&fw_hist, &b);
	if (h)
		__sync_fetch_and_add(h, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
