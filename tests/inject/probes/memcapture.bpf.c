/* bpftime's memory-capture probe name: a histogram of access sizes (log2) per state
 * space, and the site of the last access seen. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

SEC("kprobe/__memcapture")
int capture(struct bpf2ptx_mem_ctx *ctx)
{
	__u32 size = ctx->size, lg = 0;

	while (size > 1 && lg < 7) {
		size >>= 1;
		lg++;
	}
	__u32 slot = BPF2PTX_MEM_SPACE(ctx->flags) * 8 + lg;
	__u64 *v = bpf_map_lookup_elem(&hist, &slot);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}
