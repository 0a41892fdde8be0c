/* Every kind of map the trace interposer binds to one instance per process and device
 * (tests of cli/interposer: fake_driver.rs, trace_cli.rs). The stand-in driver
 * (cli/interposer/tests/fake/libcuda.c) does not run PTX; with FAKE_CUDA_RUN_PROBES=1 it
 * acts out each launch of an instrumented kernel on these maps the way the rebinding
 * lowering reaches them (descriptor word 3, the ring's and .bss's reference words):
 *
 *   hits      array: +1 at key 0 per launch
 *   per_thr   per-thread array: +1 at key 0 in each thread's slot
 *   seen      hash (4 entries): one new key per launch (the launch's number), refused
 *             when the map holds max_entries keys, as the runtime's shared count does
 *   records   ringbuf: one 8-byte record per launch
 *   total     .bss: +1 per launch
 *
 * The programs below are what would do that on a GPU. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERTHREAD_ARRAY_MAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} per_thr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u64);
	__type(value, __u64);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 12);
} records SEC(".maps");

__u64 total;

SEC("gpu/entry/_Z9vectorAddPKfS0_Pf")
int on_entry(struct bpf2ptx_kernel_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&hits, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
	v = bpf_map_lookup_elem(&per_thr, &k);
	if (v)
		*v += 1;
	return 0;
}

SEC("gpu/exit.block/_Z9vectorAddPKfS0_Pf")
int on_exit(struct bpf2ptx_kernel_ctx *ctx)
{
	__u64 when = bpf_get_globaltimer(), one = 1;

	bpf_map_update_elem(&seen, &when, &one, BPF_NOEXIST);
	bpf_ringbuf_output(&records, &when, sizeof(when), 0);
	__sync_fetch_and_add(&total, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
