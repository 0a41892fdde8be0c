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
 *                                         before every instruction that moves data
 *                                         (ld, st, atom, red, cp.async, the bulk and
 *                                         tensor copies, ldmatrix, prefetch, ...) on
 *                                         global, shared, local or generic memory
 *   gpu/insn/KERNEL/OPCODE                before every instruction whose opcode starts
 *                                         with OPCODE's components (wgmma, mma.sync,
 *                                         bar, cp.async.bulk.tensor, ...)
 *
 * KERNEL is the PTX name (`_Z6vecAddPKfS0_Pfi`), the C++ name it mangles
 * (`vecAdd`), or `*` for every kernel. `gpu/entry.warp/...`,
 * `gpu/insn.warp/.../wgmma` (suffix .thread, .warp or .block on the attach point)
 * choose the granularity; otherwise `--granularity` (default: thread) does.
 */

/* The context structs, their constants, and the opcode and group numbers of
 * `gpu/insn` and memory sites: generated from compiler/backend/src/inject/attach.rs,
 * access/mod.rs and opcodes.rs (what each field holds per instruction: specs/abi.md,
 * "Memory contexts"). The first 24 bytes of bpf2ptx_mem_ctx, and its flag bits 0-2 and
 * spaces 0-4, are those of the first release: probes built against it read the same
 * values. */
/* BEGIN GENERATED (tests/tests/attach_points.rs; BLESS=1 rewrites) */
/* Entry and exit probes: 8 bytes. */
struct bpf2ptx_kernel_ctx {
	__u32 kernel;       /*  0: index of the kernel among the input's .entry functions */
	__u32 site;         /*  4: 1-based line of the attach point in the input PTX */
};

/* Memory probes: the access the instrumented instruction makes: 80 bytes. */
struct bpf2ptx_mem_ctx {
	__u64 addr;         /*  0: the address the instruction computes, in its space (a copy's source; a tensor copy's tensor map) */
	__u32 size;         /*  8: bytes this thread's instruction reads or writes at addr (0: none, or not known: BPF2PTX_MEM_TENSOR) */
	__u32 flags;        /* 12: BPF2PTX_MEM_* bits | space << 8 | space2 << 16 */
	__u32 kernel;       /* 16: as in bpf2ptx_kernel_ctx */
	__u32 site;         /* 20: 1-based line of the instruction in the input PTX */
	__u64 addr2;        /* 24: the second address: a copy's destination, a tensor copy's shared memory, the mbarrier of red.async/st.async; 0 when none */
	__u64 policy;       /* 32: the .L2::cache_hint cache-policy operand (BPF2PTX_MEM_HINT); 0 when none */
	__u32 op;           /* 40: BPF2PTX_OP_*: the instruction */
	__u32 size2;        /* 44: bytes at addr2 (a copy's destination), or an mbarrier's transaction bytes */
	__u32 qual;         /* 48: BPF2PTX_QUAL_* fields: cache operator, eviction, semantics, scope, shape, ... */
	__u32 count;        /* 52: vector width (1: scalar), matrices (.x1/.x2/.x4), or tensor dimensions */
	__s32 coord[5];     /* 56: a tensor copy's coordinates (count of them); 0 after */
	__u32 reserved;     /* 76: 0 */
};

/* Instruction probes (gpu/insn/KERNEL/OPCODE): 16 bytes. */
struct bpf2ptx_insn_ctx {
	__u32 kernel;       /*  0: as in bpf2ptx_kernel_ctx */
	__u32 site;         /*  4: 1-based line of the instruction in the input PTX */
	__u32 op;           /*  8: BPF2PTX_OP_*: the instruction (0: an opcode the table does not know) */
	__u32 group;        /* 12: BPF2PTX_GROUP_*: its group */
};

#define BPF2PTX_MEM_LOAD                         1     /* reads memory at addr */
#define BPF2PTX_MEM_STORE                        2     /* writes memory at addr */
#define BPF2PTX_MEM_ATOMIC                       4     /* the write is a read-modify-write */
#define BPF2PTX_MEM_LOAD2                        8     /* reads memory at addr2 */
#define BPF2PTX_MEM_STORE2                       16    /* writes memory at addr2 */
#define BPF2PTX_MEM_ASYNC                        32    /* completes after the instruction */
#define BPF2PTX_MEM_TENSOR                       64    /* addr is a tensor map; the bytes are its box's */
#define BPF2PTX_MEM_HINT                         128   /* policy holds an L2 cache policy */
#define BPF2PTX_MEM_SPACE_SHIFT                  8
#define BPF2PTX_MEM_SPACE2_SHIFT                 16
#define BPF2PTX_MEM_SPACE(flags)                 (((flags) >> 8) & 0xff)
#define BPF2PTX_MEM_SPACE2(flags)                (((flags) >> 16) & 0xff)
#define BPF2PTX_SPACE_GENERIC                    0
#define BPF2PTX_SPACE_GLOBAL                     1
#define BPF2PTX_SPACE_SHARED                     2
#define BPF2PTX_SPACE_LOCAL                      3
#define BPF2PTX_SPACE_SHARED_CLUSTER             4
#define BPF2PTX_SPACE_CONST                      5
#define BPF2PTX_SPACE_PARAM                      6

/* qual bits 0-2: cache operator */
#define BPF2PTX_QUAL_CACHE(qual)                 (((qual) >> 0) & 0x7)
#define BPF2PTX_QUAL_CACHE_CA                    1
#define BPF2PTX_QUAL_CACHE_CG                    2
#define BPF2PTX_QUAL_CACHE_CS                    3
#define BPF2PTX_QUAL_CACHE_LU                    4
#define BPF2PTX_QUAL_CACHE_CV                    5
#define BPF2PTX_QUAL_CACHE_WB                    6
#define BPF2PTX_QUAL_CACHE_WT                    7
/* qual bits 3-3: non-coherent (read-only) path */
#define BPF2PTX_QUAL_NC(qual)                    (((qual) >> 3) & 0x1)
#define BPF2PTX_QUAL_NC_YES                      1
/* qual bits 4-6: L1 eviction priority */
#define BPF2PTX_QUAL_L1(qual)                    (((qual) >> 4) & 0x7)
#define BPF2PTX_QUAL_L1_EVICT_NORMAL             1
#define BPF2PTX_QUAL_L1_EVICT_UNCHANGED          2
#define BPF2PTX_QUAL_L1_EVICT_FIRST              3
#define BPF2PTX_QUAL_L1_EVICT_LAST               4
#define BPF2PTX_QUAL_L1_NO_ALLOCATE              5
/* qual bits 7-8: L2 eviction priority */
#define BPF2PTX_QUAL_L2(qual)                    (((qual) >> 7) & 0x3)
#define BPF2PTX_QUAL_L2_EVICT_NORMAL             1
#define BPF2PTX_QUAL_L2_EVICT_FIRST              2
#define BPF2PTX_QUAL_L2_EVICT_LAST               3
/* qual bits 9-10: L2 prefetch size */
#define BPF2PTX_QUAL_PREFETCH(qual)              (((qual) >> 9) & 0x3)
#define BPF2PTX_QUAL_PREFETCH_64B                1
#define BPF2PTX_QUAL_PREFETCH_128B               2
#define BPF2PTX_QUAL_PREFETCH_256B               3
/* qual bits 11-13: memory-ordering semantics */
#define BPF2PTX_QUAL_SEM(qual)                   (((qual) >> 11) & 0x7)
#define BPF2PTX_QUAL_SEM_WEAK                    1
#define BPF2PTX_QUAL_SEM_VOLATILE                2
#define BPF2PTX_QUAL_SEM_RELAXED                 3
#define BPF2PTX_QUAL_SEM_ACQUIRE                 4
#define BPF2PTX_QUAL_SEM_RELEASE                 5
#define BPF2PTX_QUAL_SEM_ACQ_REL                 6
#define BPF2PTX_QUAL_SEM_MMIO                    7
/* qual bits 14-16: scope */
#define BPF2PTX_QUAL_SCOPE(qual)                 (((qual) >> 14) & 0x7)
#define BPF2PTX_QUAL_SCOPE_CTA                   1
#define BPF2PTX_QUAL_SCOPE_CLUSTER               2
#define BPF2PTX_QUAL_SCOPE_GPU                   3
#define BPF2PTX_QUAL_SCOPE_SYS                   4
/* qual bits 17-19: ldmatrix/stmatrix shape */
#define BPF2PTX_QUAL_SHAPE(qual)                 (((qual) >> 17) & 0x7)
#define BPF2PTX_QUAL_SHAPE_M8N8                  1
#define BPF2PTX_QUAL_SHAPE_M16N16                2
#define BPF2PTX_QUAL_SHAPE_M8N16                 3
#define BPF2PTX_QUAL_SHAPE_M16N8                 4
/* qual bits 20-20: ldmatrix/stmatrix .trans */
#define BPF2PTX_QUAL_TRANS(qual)                 (((qual) >> 20) & 0x1)
#define BPF2PTX_QUAL_TRANS_YES                   1
/* qual bits 21-23: tensor copy load mode */
#define BPF2PTX_QUAL_MODE(qual)                  (((qual) >> 21) & 0x7)
#define BPF2PTX_QUAL_MODE_TILE                   1
#define BPF2PTX_QUAL_MODE_IM2COL                 2
#define BPF2PTX_QUAL_MODE_GATHER4                3
#define BPF2PTX_QUAL_MODE_SCATTER4               4
#define BPF2PTX_QUAL_MODE_IM2COL_W               5
#define BPF2PTX_QUAL_MODE_IM2COL_W_128           6
#define BPF2PTX_QUAL_MODE_IM2COL_NO_OFFS         7
/* qual bits 24-24: multicast to the CTAs of ctaMask */
#define BPF2PTX_QUAL_MULTICAST(qual)             (((qual) >> 24) & 0x1)
#define BPF2PTX_QUAL_MULTICAST_YES               1
/* qual bits 25-26: prefetch cache level */
#define BPF2PTX_QUAL_LEVEL(qual)                 (((qual) >> 25) & 0x3)
#define BPF2PTX_QUAL_LEVEL_L1                    1
#define BPF2PTX_QUAL_LEVEL_L2                    2
/* qual bits 27-29: wmma.load/store matrix */
#define BPF2PTX_QUAL_MATRIX(qual)                (((qual) >> 27) & 0x7)
#define BPF2PTX_QUAL_MATRIX_A                    1
#define BPF2PTX_QUAL_MATRIX_B                    2
#define BPF2PTX_QUAL_MATRIX_C                    3
#define BPF2PTX_QUAL_MATRIX_D                    4

#define BPF2PTX_GROUP_MEMORY                     1
#define BPF2PTX_GROUP_ATOMIC                     2
#define BPF2PTX_GROUP_ASYNC_COPY                 3
#define BPF2PTX_GROUP_MATRIX_MEMORY              4
#define BPF2PTX_GROUP_TENSOR_CORE                5
#define BPF2PTX_GROUP_TENSOR_MEMORY              6
#define BPF2PTX_GROUP_SYNC                       7
#define BPF2PTX_GROUP_WARP                       8
#define BPF2PTX_GROUP_CONTROL                    9
#define BPF2PTX_GROUP_ALU                        10
#define BPF2PTX_GROUP_CONVERT                    11
#define BPF2PTX_GROUP_TEXTURE                    12
#define BPF2PTX_GROUP_MISC                       13

#define BPF2PTX_OP_LD                            1
#define BPF2PTX_OP_LDU                           2
#define BPF2PTX_OP_ST                            3
#define BPF2PTX_OP_ST_ASYNC                      4
#define BPF2PTX_OP_ST_BULK                       5
#define BPF2PTX_OP_PREFETCH                      6
#define BPF2PTX_OP_PREFETCHU                     7
#define BPF2PTX_OP_MULTIMEM_LD_REDUCE            8
#define BPF2PTX_OP_MULTIMEM_ST                   9
#define BPF2PTX_OP_MULTIMEM_CP                   10
#define BPF2PTX_OP_DISCARD                       11
#define BPF2PTX_OP_APPLYPRIORITY                 12
#define BPF2PTX_OP_CREATEPOLICY                  13
#define BPF2PTX_OP_ATOM                          20
#define BPF2PTX_OP_RED                           21
#define BPF2PTX_OP_RED_ASYNC                     22
#define BPF2PTX_OP_MULTIMEM_RED                  23
#define BPF2PTX_OP_CP_ASYNC                      30
#define BPF2PTX_OP_CP_ASYNC_COMMIT_GROUP         31
#define BPF2PTX_OP_CP_ASYNC_WAIT_GROUP           32
#define BPF2PTX_OP_CP_ASYNC_WAIT_ALL             33
#define BPF2PTX_OP_CP_ASYNC_MBARRIER_ARRIVE      34
#define BPF2PTX_OP_CP_ASYNC_BULK                 35
#define BPF2PTX_OP_CP_ASYNC_BULK_COMMIT_GROUP    36
#define BPF2PTX_OP_CP_ASYNC_BULK_WAIT_GROUP      37
#define BPF2PTX_OP_CP_ASYNC_BULK_PREFETCH        38
#define BPF2PTX_OP_CP_ASYNC_BULK_TENSOR          39
#define BPF2PTX_OP_CP_ASYNC_BULK_PREFETCH_TENSOR 40
#define BPF2PTX_OP_CP_REDUCE_ASYNC_BULK          41
#define BPF2PTX_OP_CP_REDUCE_ASYNC_BULK_TENSOR   42
#define BPF2PTX_OP_TENSORMAP_CP_FENCEPROXY       43
#define BPF2PTX_OP_TENSORMAP_REPLACE             44
#define BPF2PTX_OP_LDMATRIX                      50
#define BPF2PTX_OP_STMATRIX                      51
#define BPF2PTX_OP_WMMA_LOAD                     52
#define BPF2PTX_OP_WMMA_STORE                    53
#define BPF2PTX_OP_MOVMATRIX                     54
#define BPF2PTX_OP_MMA                           60
#define BPF2PTX_OP_WMMA_MMA                      61
#define BPF2PTX_OP_WGMMA_MMA_ASYNC               62
#define BPF2PTX_OP_WGMMA_FENCE                   63
#define BPF2PTX_OP_WGMMA_COMMIT_GROUP            64
#define BPF2PTX_OP_WGMMA_WAIT_GROUP              65
#define BPF2PTX_OP_TCGEN05_MMA                   66
#define BPF2PTX_OP_TCGEN05                       67
#define BPF2PTX_OP_BAR                           70
#define BPF2PTX_OP_BARRIER                       71
#define BPF2PTX_OP_MEMBAR                        72
#define BPF2PTX_OP_FENCE                         73
#define BPF2PTX_OP_MBARRIER                      74
#define BPF2PTX_OP_MBARRIER_PENDING_COUNT        75
#define BPF2PTX_OP_GRIDDEPCONTROL                76
#define BPF2PTX_OP_SHFL                          80
#define BPF2PTX_OP_VOTE                          81
#define BPF2PTX_OP_MATCH                         82
#define BPF2PTX_OP_REDUX                         83
#define BPF2PTX_OP_ACTIVEMASK                    84
#define BPF2PTX_OP_ELECT                         85
#define BPF2PTX_OP_BRA                           90
#define BPF2PTX_OP_BRX                           91
#define BPF2PTX_OP_CALL                          92
#define BPF2PTX_OP_RET                           93
#define BPF2PTX_OP_EXIT                          94
#define BPF2PTX_OP_TRAP                          95
#define BPF2PTX_OP_BRKPT                         96
#define BPF2PTX_OP_NANOSLEEP                     97
#define BPF2PTX_OP_PMEVENT                       98
#define BPF2PTX_OP_SETMAXNREG                    99
#define BPF2PTX_OP_CLUSTERLAUNCHCONTROL          100
#define BPF2PTX_OP_MOV                           110
#define BPF2PTX_OP_CVT                           111
#define BPF2PTX_OP_SELP                          112
#define BPF2PTX_OP_SLCT                          113
#define BPF2PTX_OP_PRMT                          114
#define BPF2PTX_OP_CVTA                          115
#define BPF2PTX_OP_ISSPACEP                      116
#define BPF2PTX_OP_MAPA                          117
#define BPF2PTX_OP_GETCTARANK                    118
#define BPF2PTX_OP_ALLOCA                        119
#define BPF2PTX_OP_STACKSAVE                     120
#define BPF2PTX_OP_STACKRESTORE                  121
#define BPF2PTX_OP_ISTYPEP                       122
#define BPF2PTX_OP_TEX                           130
#define BPF2PTX_OP_TLD4                          131
#define BPF2PTX_OP_TXQ                           132
#define BPF2PTX_OP_SULD                          133
#define BPF2PTX_OP_SUST                          134
#define BPF2PTX_OP_SURED                         135
#define BPF2PTX_OP_SUQ                           136
#define BPF2PTX_OP_ADD                           140
#define BPF2PTX_OP_SUB                           141
#define BPF2PTX_OP_MUL                           142
#define BPF2PTX_OP_MAD                           143
#define BPF2PTX_OP_MUL24                         144
#define BPF2PTX_OP_MAD24                         145
#define BPF2PTX_OP_ADDC                          146
#define BPF2PTX_OP_SUBC                          147
#define BPF2PTX_OP_MADC                          148
#define BPF2PTX_OP_SAD                           149
#define BPF2PTX_OP_DIV                           150
#define BPF2PTX_OP_REM                           151
#define BPF2PTX_OP_ABS                           152
#define BPF2PTX_OP_NEG                           153
#define BPF2PTX_OP_MIN                           154
#define BPF2PTX_OP_MAX                           155
#define BPF2PTX_OP_POPC                          156
#define BPF2PTX_OP_CLZ                           157
#define BPF2PTX_OP_BFIND                         158
#define BPF2PTX_OP_FNS                           159
#define BPF2PTX_OP_BREV                          160
#define BPF2PTX_OP_BFE                           161
#define BPF2PTX_OP_BFI                           162
#define BPF2PTX_OP_BMSK                          163
#define BPF2PTX_OP_SZEXT                         164
#define BPF2PTX_OP_DP4A                          165
#define BPF2PTX_OP_DP2A                          166
#define BPF2PTX_OP_FMA                           167
#define BPF2PTX_OP_RCP                           168
#define BPF2PTX_OP_SQRT                          169
#define BPF2PTX_OP_RSQRT                         170
#define BPF2PTX_OP_SIN                           171
#define BPF2PTX_OP_COS                           172
#define BPF2PTX_OP_LG2                           173
#define BPF2PTX_OP_EX2                           174
#define BPF2PTX_OP_TANH                          175
#define BPF2PTX_OP_COPYSIGN                      176
#define BPF2PTX_OP_TESTP                         177
#define BPF2PTX_OP_SET                           178
#define BPF2PTX_OP_SETP                          179
#define BPF2PTX_OP_AND                           180
#define BPF2PTX_OP_OR                            181
#define BPF2PTX_OP_XOR                           182
#define BPF2PTX_OP_NOT                           183
#define BPF2PTX_OP_CNOT                          184
#define BPF2PTX_OP_LOP3                          185
#define BPF2PTX_OP_SHF                           186
#define BPF2PTX_OP_SHL                           187
#define BPF2PTX_OP_SHR                           188
#define BPF2PTX_OP_VADD                          189
#define BPF2PTX_OP_VSUB                          190
#define BPF2PTX_OP_VABSDIFF                      191
#define BPF2PTX_OP_VMIN                          192
#define BPF2PTX_OP_VMAX                          193
#define BPF2PTX_OP_VSHL                          194
#define BPF2PTX_OP_VSHR                          195
#define BPF2PTX_OP_VMAD                          196
#define BPF2PTX_OP_VSET                          197
#define BPF2PTX_OP_VADD2                         198
#define BPF2PTX_OP_VSUB2                         199
#define BPF2PTX_OP_VAVRG2                        200
#define BPF2PTX_OP_VABSDIFF2                     201
#define BPF2PTX_OP_VMIN2                         202
#define BPF2PTX_OP_VMAX2                         203
#define BPF2PTX_OP_VSET2                         204
#define BPF2PTX_OP_VADD4                         205
#define BPF2PTX_OP_VSUB4                         206
#define BPF2PTX_OP_VAVRG4                        207
#define BPF2PTX_OP_VABSDIFF4                     208
#define BPF2PTX_OP_VMIN4                         209
#define BPF2PTX_OP_VMAX4                         210
#define BPF2PTX_OP_VSET4                         211
/* END GENERATED */

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
 * end). bpf2ptx_launch_span_start/_end, at the end of this file, keep it: the
 * earliest start and latest end seen. */
struct bpf2ptx_launch_span {
	__u64 first_block_ns;	/* globaltimer at the first block's start */
	__u64 last_block_ns;	/* globaltimer at the last block's end */
};


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

/*
 * bpf2ptx_log2
 *
 * 	floor(log2(v)), 0 for v == 0: the bucket of a log2 histogram in one
 * 	PTX bfind, where the usual shift-and-compare cascade takes about a dozen
 * 	instructions at every site. A bpf2ptx helper; host programs (the
 * 	interpreter) have it too.
 *
 * Returns
 * 	0 to 63.
 */
static __u64 (* const bpf2ptx_log2)(__u64 v) = (void *) 603;

/* ---- launch spans (need the helpers above) ---------------------------- */

#ifdef __BPF_HELPERS__ /* libbpf's bpf_helpers.h: bpf_map_lookup_elem and friends */
/* Earliest `now` for launch `host_ns` in span map `spans` (at block entry). */
static __always_inline void bpf2ptx_launch_span_start(void *spans, __u64 host_ns, __u64 now)
{
	struct bpf2ptx_launch_span init = { now, now }, *s;
	__u64 old;

	s = bpf_map_lookup_elem(spans, &host_ns);
	if (!s) {
		/* Only the grid's first block (0, 0, 0), which the hardware dispatches
		 * first, inserts the launch. Why: every other block of the launch would
		 * otherwise miss at once and call the map's update on the one key, and
		 * a thread that waits at its block's entry (the update's lock, its
		 * loops) waits for the application's computing warps: ~55 us per block
		 * on an H100 (benches/results/gpu-2026-12-07.md, session 17). A block
		 * that starts before block 0 has inserted records no start: the first
		 * start is block 0's or an earlier one recorded after it. */
		__u64 bx, by, bz;

		bpf_get_block_idx(&bx, &by, &bz);
		if (bx | by | bz)
			return;
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

#endif /* BPF2PTX_HELPERS_H */
