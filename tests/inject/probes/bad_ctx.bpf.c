/* A memory probe that reads past its 80-byte context: the verifier must reject it
 * (`bpf2ptx inject` exits 1 and writes nothing). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} last SEC(".maps");

SEC("gpu/mem/*")
int past_the_end(struct bpf2ptx_mem_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&last, &k);

	if (v)
		*v = ((__u64 *)ctx)[10];
	return 0;
}
