/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* What a probe written for bpftime's GPU attach sees from its headers, declared here so
 * the probes of this folder build without bpftime's tree (no vmlinux.h, no libbpf
 * submodule). Every id below is a fact of bpftime's ABI, with the file it comes from
 * (eunomia-bpf/bpftime at ec26dae, August 2026):
 *
 *   map type ids    runtime/include/bpftime_shm.hpp (GPU_MAP_OFFSET = 1500, the Linux id
 *                   added to it) and attach/nv_attach_impl/trampoline/default_trampoline.cu
 *   helper ids      example/gpu/ * / *.bpf.c declare them one by one as
 *                   `static const u64 (*name)(...) = (void *)50N;`; the device bodies are
 *                   _bpf_helper_ext_05NN in default_trampoline.cu
 *
 * bpftime's examples include <vmlinux.h>, <bpf/bpf_helpers.h> and <bpf/bpf_tracing.h>
 * after `#define BPF_NO_GLOBAL_DATA`, and name the GPU programs `cuda__*` (bpftime loads a
 * program on the GPU only when its name starts with `cuda__`: runtime/include/bpftime_prog.hpp,
 * is_cuda()). Sections: "kprobe/<PTX kernel name>" (entry), "kretprobe/<PTX kernel name>"
 * (before every exit), "kprobe/__memcapture" (every memory access), a comma-separated
 * list of kernels allowed (attach/nv_attach_impl/nv_attach_private_data.cpp). */
#ifndef BPFTIME_GPU_H
#define BPFTIME_GPU_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* vmlinux.h's short integer names, which bpftime's probes use throughout. */
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;

/* bpftime's memcapture and direct-run probes take `struct pt_regs *ctx` (from vmlinux.h);
 * only the pointer is used. */
struct pt_regs;

/* GPU map types: GPU_MAP_OFFSET (1500) + the Linux id. */
#define BPF_MAP_TYPE_GPU_HASH_MAP 1501                /* 1500 + HASH: one shared copy */
#define BPF_MAP_TYPE_PERGPUTD_ARRAY_MAP 1502          /* 1500 + ARRAY: one copy per GPU thread */
#define BPF_MAP_TYPE_GPU_ARRAY_MAP 1503               /* 1500 + ARRAY + 1: one shared copy */
#define BPF_MAP_TYPE_GPU_KERNEL_SHARED_ARRAY_MAP 1504 /* 1500 + ARRAY + 2: shared with the
                                                       * Linux kernel's eBPF (BPF_F_MMAPABLE) */
#define BPF_MAP_TYPE_PERGPUTD_ARRAY_HOST_MAP 1512     /* 1500 + ARRAY + 10: per thread, in
                                                       * host memory (no CUDA IPC: Tegra) */
#define BPF_MAP_TYPE_GPU_ARRAY_HOST_MAP 1513          /* 1500 + ARRAY + 11: shared, in host
                                                       * memory */
#define BPF_MAP_TYPE_GPU_RINGBUF_MAP 1527             /* 1500 + RINGBUF: per-thread rings that
                                                       * bpf_perf_event_output(NULL, ...) fills */

/* GPU helpers, declared as bpftime's examples declare them (a pointer whose target
 * returns `const u64`; the pointer itself is a static, never-written variable). */
static const void (*ebpf_puts)(const char *) = (void *)501;
static const u64 (*bpf_get_globaltimer)(void) = (void *)502;
static const u64 (*bpf_get_block_idx)(u64 *x, u64 *y, u64 *z) = (void *)503;
static const u64 (*bpf_get_block_dim)(u64 *x, u64 *y, u64 *z) = (void *)504;
static const u64 (*bpf_get_thread_idx)(u64 *x, u64 *y, u64 *z) = (void *)505;
static const u64 (*bpf_gpu_membar)(void) = (void *)506;   /* membar.sys */
static const u64 (*bpf_cuda_exit)() = (void *)507;        /* the thread exits */
static const u64 (*bpf_get_grid_dim)(u64 *x, u64 *y, u64 *z) = (void *)508;
static const u64 (*bpf_get_sm_id)(void) = (void *)509;
static const u64 (*bpf_get_warp_id)(void) = (void *)510;
static const u64 (*bpf_get_lane_id)(void) = (void *)511;

/* bpftime's own vector add (example/gpu/ * /vec_add.cu: `__global__ void vectorAdd(const
 * float *A, const float *B, float *C)`), the kernel its GPU examples attach to. */
#define VEC_ADD "_Z9vectorAddPKfS0_Pf"

#endif
