// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * mem_kernel: the bytes each kernel moves, by direction, state space and memory ordering
 * (specs/abi.md, "Memory contexts"): a kernel's data traffic apart from its
 * synchronisation traffic (volatile, relaxed, acquire and release accesses: look-back
 * flags, ready bits, locks), which is the part whose amount depends on timing.
 *
 *   key = kernel << 8 | sem << 5 | dir << 3 | space
 *
 * kernel: ctx->kernel, the kernel's index among the module's .entry functions
 * (`bpf2ptx inject --sites` names them; MAX_KERNELS - 1 for any above);
 * sem: BPF2PTX_QUAL_SEM(ctx->qual): 0 none named, 1 weak, 2 volatile, 3 relaxed,
 * 4 acquire, 5 release, 6 acq_rel, 7 mmio;
 * dir: 0 load, 1 store, 2 read-modify-write (atom, red, reducing copies), 3 none (a
 * prefetch, an access that moves no bytes);
 * space: of the address: 0 generic, 1 global, 2 shared, 3 local, 4 shared::cluster.
 *
 * A copy's second side (cp.async's shared destination, a bulk copy's destination, a
 * tensor store's shared source) counts at its own space as the load or store it is, with
 * size2. An mbarrier's transaction bytes are not memory its instruction moves and are not
 * counted (mem_traffic.bpf.c counts them). Every thread runs it at every site;
 * kmem_bytes adds the bytes, kmem_count the accesses.
 */
#include "common.h"

#define MAX_KERNELS 128

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_KERNELS << 8);
	__type(key, __u32);
	__type(value, __u64);
} kmem_bytes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_KERNELS << 8);
	__type(key, __u32);
	__type(value, __u64);
} kmem_count SEC(".maps");

static __always_inline void add(__u32 key, __u64 bytes)
{
	__u64 *v = bpf_map_lookup_elem(&kmem_bytes, &key);

	if (v)
		__sync_fetch_and_add(v, bytes);
	v = bpf_map_lookup_elem(&kmem_count, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("gpu/mem/*")
int mem_kernel(struct bpf2ptx_mem_ctx *ctx)
{
	__u32 f = ctx->flags;
	__u32 k = ctx->kernel < MAX_KERNELS ? ctx->kernel : MAX_KERNELS - 1;
	__u32 base = k << 8 | (BPF2PTX_QUAL_SEM(ctx->qual) & 7) << 5;
	__u32 dir;

	/* The side at addr. */
	if ((f & BPF2PTX_MEM_ATOMIC) && (f & BPF2PTX_MEM_STORE))
		dir = 2;
	else if (f & BPF2PTX_MEM_STORE)
		dir = 1;
	else if (f & BPF2PTX_MEM_LOAD)
		dir = 0;
	else
		dir = 3;
	add(base | dir << 3 | (BPF2PTX_MEM_SPACE(f) & 7), ctx->size);
	/* The side at addr2: a reducing copy's atomic side is its destination. */
	if (f & (BPF2PTX_MEM_LOAD2 | BPF2PTX_MEM_STORE2)) {
		if (f & BPF2PTX_MEM_STORE2)
			dir = (f & BPF2PTX_MEM_ATOMIC) && !(f & BPF2PTX_MEM_STORE) ? 2 : 1;
		else
			dir = 0;
		add(base | dir << 3 | (BPF2PTX_MEM_SPACE2(f) & 7), ctx->size2);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
