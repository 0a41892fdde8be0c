// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * dwarf_only: launches per grid shape, from an object without .BTF.ext.
 *
 * A GPU user runs this to learn which launch configurations a library
 * picks (grid and block shape per call). build.sh strips .BTF.ext (and its
 * relocations) from the object but keeps DWARF, as some build pipelines
 * do, so bpf2ptx must take func and line info from .debug_line instead.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct shape {
	__u32 grid[3];
	__u32 block[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 512);
	__type(key, struct shape);
	__type(value, __u64);
} shapes SEC(".maps");

static __noinline int read_shape(struct shape *s)
{
	__u64 x, y, z;

	bpf_get_grid_dim(&x, &y, &z);
	s->grid[0] = x;
	s->grid[1] = y;
	s->grid[2] = z;
	bpf_get_block_dim(&x, &y, &z);
	s->block[0] = x;
	s->block[1] = y;
	s->block[2] = z;
	return x * y * z > 1024;	/* not a valid CUDA launch */
}

SEC("kprobe/_Z8cublas_gemv_kernel")
int count_shape(void *ctx)
{
	struct shape s = {};
	__u64 one = 1, *n;
	__u64 bx, by, bz, tx, ty, tz;

	/* one thread of the whole grid counts the launch */
	bpf_get_block_idx(&bx, &by, &bz);
	bpf_get_thread_idx(&tx, &ty, &tz);
	if (bx | by | bz | tx | ty | tz)
		return 0;
	if (read_shape(&s))
		return 0;
	n = bpf_map_lookup_elem(&shapes, &s);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&shapes, &s, &one, BPF_NOEXIST);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
