/* A ring probe for injection with the default placement (rings in host memory, drained by
 * the host): at every kernel exit, once per warp, the leader lane writes one 16-byte
 * record {its global thread id, the lanes it stands for} to `events`.
 * tests/gpu/inject_check.py binds the ring as specs/abi.md says, runs vecadd with it
 * (inlined and called) and checks every warp's record.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

SEC("gpu/exit.warp/*")
int warp_exit_record(void *ctx)
{
	__u64 rec[2];

	rec[0] = bpf2ptx_get_global_thread_id();
	rec[1] = bpf2ptx_get_active_mask();
	bpf_ringbuf_output(&events, rec, sizeof(rec), 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
