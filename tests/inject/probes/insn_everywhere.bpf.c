/* Instruction probes before the opcodes compilers emit most (tests/tests/attach_points.rs):
 * a site may go before any instruction, inside call sequences, loops and inline-asm
 * scopes, and ptxas must accept every output. Each counts per opcode number. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} ie_ops SEC(".maps");

#define PROBE(name, section)                                            \
	SEC(section) int name(struct bpf2ptx_insn_ctx *ctx)             \
	{                                                               \
		__u32 k = ctx->op & 0xff;                               \
		__u64 *v = bpf_map_lookup_elem(&ie_ops, &k);            \
		if (v)                                                  \
			__sync_fetch_and_add(v, 1);                     \
		return 0;                                               \
	}

PROBE(ie_ld, "gpu/insn/*/ld")
PROBE(ie_st, "gpu/insn.warp/*/st")
PROBE(ie_call, "gpu/insn/*/call")
PROBE(ie_ret, "gpu/insn.block/*/ret")
PROBE(ie_exit, "gpu/insn/*/exit")
PROBE(ie_bra, "gpu/insn.warp/*/bra")
PROBE(ie_mov, "gpu/insn/*/mov")
PROBE(ie_setp, "gpu/insn/*/setp")
PROBE(ie_cvt, "gpu/insn.block/*/cvt")
PROBE(ie_add, "gpu/insn/*/add")
PROBE(ie_fma, "gpu/insn.warp/*/fma")
PROBE(ie_atom, "gpu/insn/*/atom")
PROBE(ie_red, "gpu/insn/*/red")
PROBE(ie_shfl, "gpu/insn.warp/*/shfl")
PROBE(ie_bar, "gpu/insn/*/bar")
PROBE(ie_cp, "gpu/insn.warp/*/cp")
PROBE(ie_mbarrier, "gpu/insn/*/mbarrier")
PROBE(ie_fence, "gpu/insn/*/fence")
PROBE(ie_wgmma, "gpu/insn.block/*/wgmma")
PROBE(ie_mma, "gpu/insn/*/mma")
PROBE(ie_ldmatrix, "gpu/insn.warp/*/ldmatrix")
PROBE(ie_stmatrix, "gpu/insn/*/stmatrix")
PROBE(ie_wmma, "gpu/insn/*/wmma")
PROBE(ie_prefetch, "gpu/insn/*/prefetch")

char LICENSE[] SEC("license") = "Dual MIT/GPL";
