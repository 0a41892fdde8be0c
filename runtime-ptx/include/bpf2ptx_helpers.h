/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * bpf2ptx_helpers.h - GPU helpers and GPU map types for probe authors.
 *
 * Self-contained: a probe needs only
 *
 *     #include "bpf2ptx_helpers.h"
 *
 * which brings <linux/bpf.h> (the __u64 types, BPF_MAP_TYPE_*) and libbpf's
 * <bpf/bpf_helpers.h> (SEC, __uint, the kernel helpers) unless they are
 * already there. A probe built against vmlinux.h includes vmlinux.h FIRST:
 * vmlinux.h defines the UAPI types itself, so <linux/bpf.h> is then skipped
 * (including it after vmlinux.h would define every type twice); the other
 * order, vmlinux.h after this header, cannot work, as with libbpf. Including
 * <linux/bpf.h> and <bpf/bpf_helpers.h> before this header, as probes
 * written before it was self-contained do, still works.
 *
 * `bpf2ptx build` (and every command given a .c file) provides this header
 * from the binary itself, so no -I is needed for it.
 *
 * The helper ids and map type ids are the ones bpftime uses, so a probe
 * written for bpftime's CUDA attach builds unchanged.
 *
 * Each helper is declared the way libbpf's bpf_helper_defs.h declares the
 * kernel helpers: a constant function pointer whose value is the helper id.
 * clang turns a call through it into `call <id>`.
 *
 * The pointer arguments of the *_idx / *_dim helpers must point to
 * writable memory (usually the probe's stack); all three are written.
 */
#ifndef BPF2PTX_HELPERS_H
#define BPF2PTX_HELPERS_H

/* vmlinux.h (bpftool btf dump ... format c) guards itself with __VMLINUX_H__
 * and already defines what <linux/bpf.h> would. */
#if !defined(__VMLINUX_H__) && !defined(__LINUX_BPF_H__) && !defined(_UAPI__LINUX_BPF_H__)
#include <linux/bpf.h>
#endif
#ifndef __BPF_HELPERS__
#include <bpf/bpf_helpers.h>
#endif

/* ---- map types (values of __uint(type, ...)) ------------------------- */

/* Hash map kept in GPU memory, shared by all threads. */
#define BPF_MAP_TYPE_GPU_HASH_MAP 1501
/* Array with one private copy of every entry per GPU thread. */
#define BPF_MAP_TYPE_PERTHREAD_ARRAY_MAP 1502
/* Array with a single copy shared by all GPU threads (host-visible). */
#define BPF_MAP_TYPE_GPU_ARRAY_MAP 1503
/* Per-thread ring buffers that stream records to the host; write to it with
 * bpf_perf_event_output(ctx, &map, 0, data, size). */
#define BPF_MAP_TYPE_GPU_RINGBUF_MAP 1527
/* bpf2ptx: array with one private copy of every entry per warp of the launch (the host
 * sizes it from the launch shape); a lookup returns the calling warp's copy. */
#define BPF_MAP_TYPE_PERWARP_ARRAY_MAP 1600
/* BPF_MAP_TYPE_PERCPU_ARRAY (6) is per SM on the GPU: a lookup returns the copy of the
 * SM the thread runs on (SM id & 255), and the host reads every SM's copy. */

/* ---- probe contexts (what r1 points to; read-only) --------------------
 *
 * `bpf2ptx inject` attaches a program by its section name:
 *
 *   gpu/entry/KERNEL   kprobe/KERNEL      at the kernel's first instruction
 *   gpu/exit/KERNEL    kretprobe/KERNEL   before every ret and exit
 *   gpu/mem/KERNEL     kprobe/__memcapture (all kernels)
 *                                         before every ld/st/atom/red on global,
 *                                         shared, local or generic memory
 *
 * KERNEL is the PTX name (`_Z6vecAddPKfS0_Pfi`), the C++ name it mangles
 * (`vecAdd`), or `*` for every kernel. `gpu/entry.warp/...`,
 * `gpu/exit.block/...` (suffix .thread, .warp or .block on the attach point)
 * choose the granularity; otherwise `--granularity` (default: thread) does.
 */

/* Entry and exit probes. */
struct bpf2ptx_kernel_ctx {
	__u32 kernel;	/* index of the kernel among the input's .entry functions */
	__u32 site;	/* 1-based line of the attach point in the input PTX */
};

/* Memory-access probes: the access the instrumented instruction makes. */
struct bpf2ptx_mem_ctx {
	__u64 addr;	/* address as the instruction computes it, in its space */
	__u32 size;	/* bytes accessed: vector width x element size */
	__u32 flags;	/* BPF2PTX_MEM_* bits | space << BPF2PTX_MEM_SPACE_SHIFT */
	__u32 kernel;	/* as in bpf2ptx_kernel_ctx */
	__u32 site;	/* 1-based line of the instruction in the input PTX */
};

#define BPF2PTX_MEM_LOAD	1	/* reads memory (ld, atom) */
#define BPF2PTX_MEM_STORE	2	/* writes memory (st, atom, red) */
#define BPF2PTX_MEM_ATOMIC	4	/* atom or red */
#define BPF2PTX_MEM_SPACE_SHIFT	8
#define BPF2PTX_MEM_SPACE(flags)	(((flags) >> 8) & 0xff)
#define BPF2PTX_SPACE_GENERIC	0
#define BPF2PTX_SPACE_GLOBAL	1
#define BPF2PTX_SPACE_SHARED	2
#define BPF2PTX_SPACE_LOCAL	3

/* ---- host-side programs (bpf2ptx trace) ------------------------------
 *
 * `bpf2ptx trace` runs programs in these sections on the CPU, inside the
 * application, at each kernel launch, before the launch reaches the driver:
 *
 *   host/launch/KERNEL   launches of KERNEL (as above: PTX name, C++ name or *);
 *                        context: struct bpf2ptx_launch_ctx
 *   uprobe/...cudaLaunchKernel..., uprobe (bpftime's launchlate)
 *                        every launch; context: x86-64 struct pt_regs holding
 *                        cudaLaunchKernel's arguments (PT_REGS_PARM1 = the function
 *                        handle, PARM2 = grid x | y << 32, PARM3 = grid z,
 *                        PARM4 = block x | y << 32, PARM5 = block z)
 *
 * Host programs may call map lookup/update/delete (on arrays: BPF_MAP_TYPE_ARRAY,
 * 1503, 1504, 1513), bpf_ktime_get_ns, bpf_trace_printk, bpf_get_current_pid_tgid,
 * bpf_snprintf and bpf_loop. The arrays they use live in pinned host memory that the
 * GPU probes use too (one instance per process), so a host program's store is what
 * the next kernel's probe reads. bpf_ktime_get_ns() and host_ns below are on the
 * GPU's bpf_get_globaltimer() timeline: a GPU probe may subtract them directly.
 * Layout: specs/abi.md, "Host-side programs".
 */
struct bpf2ptx_launch_ctx {
	__u32 grid_x, grid_y, grid_z;	/* grid, in blocks */
	__u32 block_x, block_y, block_z;	/* block, in threads */
	__u32 shared_bytes;	/* dynamic shared memory of the launch */
	__u32 kernel;		/* kernel id: 1 for the first name launched, 2 next, ... */
	__u64 stream;		/* the CUstream (0: the legacy default stream) */
	__u64 host_ns;		/* the launch call, on the GPU's globaltimer timeline */
	__u64 kernel_hash;	/* FNV-1a 64 of the kernel's PTX name */
	__u64 seq;		/* the launch's number in the process, from 1 */
};

/* The value of a map marked __attribute__((btf_decl_tag("bpf2ptx:launch_spans"))):
 * a hash map keyed by a launch's host_ns (__u64), whose entries `bpf2ptx trace
 * --trace-events` joins with its launch records (first block start, last block
 * end). The two functions below keep it: the earliest start and latest end seen. */
struct bpf2ptx_launch_span {
	__u64 first_block_ns;	/* globaltimer at the first block's start */
	__u64 last_block_ns;	/* globaltimer at the last block's end */
};

#ifdef __BPF_HELPERS__ /* libbpf's bpf_helpers.h: bpf_map_lookup_elem and friends */
/* Earliest `now` for launch `host_ns` in span map `spans` (at block entry). */
static __always_inline void bpf2ptx_launch_span_start(void *spans, __u64 host_ns, __u64 now)
{
	struct bpf2ptx_launch_span init = { now, now }, *s;
	__u64 old;

	s = bpf_map_lookup_elem(spans, &host_ns);
	if (!s) {
		bpf_map_update_elem(spans, &host_ns, &init, BPF_NOEXIST);
		s = bpf_map_lookup_elem(spans, &host_ns);
		if (!s)
			return;
	}
#pragma unroll
	for (int i = 0; i < 8; i++) {
		old = s->first_block_ns;
		if (old != 0 && old <= now)
			break;
		if (__sync_val_compare_and_swap(&s->first_block_ns, old, now) == old)
			break;
	}
}

/* Latest `now` for launch `host_ns` in span map `spans` (at block exit). */
static __always_inline void bpf2ptx_launch_span_end(void *spans, __u64 host_ns, __u64 now)
{
	struct bpf2ptx_launch_span *s = bpf_map_lookup_elem(spans, &host_ns);
	__u64 old;

	if (!s)
		return;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		old = s->last_block_ns;
		if (old >= now)
			break;
		if (__sync_val_compare_and_swap(&s->last_block_ns, old, now) == old)
			break;
	}
}
#endif

/* ---- helpers ---------------------------------------------------------- */

/*
 * bpf_puts
 *
 * 	Print the NUL-terminated string *buf* to the host's output
 * 	(like puts(3), from the GPU).
 *
 * Returns
 * 	0 on success, a negative error otherwise.
 */
static long (* const bpf_puts)(const char *buf) = (void *) 501;

/*
 * bpf_get_globaltimer
 *
 * 	Read the GPU's global nanosecond timer (PTX %globaltimer). It is
 * 	the same clock on every SM, so values from different blocks can be
 * 	compared.
 *
 * Returns
 * 	The current global timer value in nanoseconds.
 */
static __u64 (* const bpf_get_globaltimer)(void) = (void *) 502;

/*
 * bpf_get_block_idx
 *
 * 	Store the calling thread's block index (CUDA blockIdx.x, .y, .z)
 * 	in *\*x*, *\*y* and *\*z*.
 *
 * Returns
 * 	0.
 */
static long (* const bpf_get_block_idx)(__u64 *x, __u64 *y, __u64 *z) = (void *) 503;

/*
 * bpf_get_block_dim
 *
 * 	Store the block dimensions (CUDA blockDim.x, .y, .z) in *\*x*, *\*y*
 * 	and *\*z*.
 *
 * Returns
 * 	0.
 */
static long (* const bpf_get_block_dim)(__u64 *x, __u64 *y, __u64 *z) = (void *) 504;

/*
 * bpf_get_thread_idx
 *
 * 	Store the calling thread's index within its block (CUDA
 * 	threadIdx.x, .y, .z) in *\*x*, *\*y* and *\*z*.
 *
 * Returns
 * 	0.
 */
static long (* const bpf_get_thread_idx)(__u64 *x, __u64 *y, __u64 *z) = (void *) 505;

/*
 * bpf_gpu_membar
 *
 * 	Memory barrier at system scope (PTX membar.sys): writes made by
 * 	this thread before the call are visible to the host and to other
 * 	GPU threads before writes made after it.
 *
 * Returns
 * 	0.
 */
static long (* const bpf_gpu_membar)(void) = (void *) 506;

/*
 * bpf_gpu_exit
 *
 * 	Terminate the calling GPU thread (PTX exit). The instrumented kernel
 * 	does not continue in this thread. Does not return.
 */
static void (* const bpf_gpu_exit)(void) = (void *) 507;

/*
 * bpf_get_grid_dim
 *
 * 	Store the grid dimensions in blocks (CUDA gridDim.x, .y, .z) in
 * 	*\*x*, *\*y* and *\*z*.
 *
 * Returns
 * 	0.
 */
static long (* const bpf_get_grid_dim)(__u64 *x, __u64 *y, __u64 *z) = (void *) 508;

/*
 * bpf_get_sm_id
 *
 * 	Identify the streaming multiprocessor running the calling thread
 * 	(PTX %smid). The value can change between calls if the block is
 * 	preempted and migrated; use it for statistics, not as a key that
 * 	must stay stable.
 *
 * Returns
 * 	The SM id.
 */
static __u64 (* const bpf_get_sm_id)(void) = (void *) 509;

/*
 * bpf_get_warp_id
 *
 * 	Identify the warp of the calling thread within its block: the thread's
 * 	linear index in the block divided by 32. (PTX %warpid, the warp's slot
 * 	on its SM, changes under preemption, so it is not what a probe wants.)
 *
 * Returns
 * 	The warp index within the block.
 */
static __u64 (* const bpf_get_warp_id)(void) = (void *) 510;

/*
 * bpf_get_lane_id
 *
 * 	Identify the calling thread's lane within its warp (PTX %laneid).
 *
 * Returns
 * 	The lane id, 0 to 31.
 */
static __u64 (* const bpf_get_lane_id)(void) = (void *) 511;

/*
 * bpf2ptx_get_global_thread_id
 *
 * 	The calling thread's index in the whole launch: linear block index
 * 	times threads per block plus the linear thread index in the block. A
 * 	bpf2ptx helper (not in bpftime).
 *
 * Returns
 * 	The global thread id.
 */
static __u64 (* const bpf2ptx_get_global_thread_id)(void) = (void *) 600;

/*
 * bpf2ptx_get_active_mask
 *
 * 	The warp's lanes that execute this call together (PTX activemask), e.g.
 * 	to let one leader lane act for the warp. A bpf2ptx helper.
 *
 * Returns
 * 	A 32-bit lane mask.
 */
static __u64 (* const bpf2ptx_get_active_mask)(void) = (void *) 601;

/*
 * bpf2ptx_clock64
 *
 * 	The SM's 64-bit cycle counter (PTX %clock64): cheap, fine-grained, but
 * 	per SM and in cycles; use bpf_get_globaltimer for nanoseconds
 * 	comparable across SMs. A bpf2ptx helper.
 *
 * Returns
 * 	The cycle count.
 */
static __u64 (* const bpf2ptx_clock64)(void) = (void *) 602;

#endif /* BPF2PTX_HELPERS_H */
