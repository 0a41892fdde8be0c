/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The three ways a probe can write a loop whose trip count comes from a map, as the
 * Linux kernel defines them (the interface is Linux's, so probes written for bpftime use
 * the same spellings; bpftime itself declares none of these):
 *
 *   bpf_loop(n, callback, ctx, 0)   helper 181 (<bpf/bpf_helper_defs.h>)
 *   bpf_for(i, start, end)          open-coded iterator: the kfuncs bpf_iter_num_new,
 *                                   bpf_iter_num_next and bpf_iter_num_destroy (Linux 6.4,
 *                                   kernel/bpf/bpf_iter.c), the macro as in the kernel's
 *                                   tools/testing/selftests/bpf/bpf_experimental.h
 *   can_loop                        the may_goto instruction (Linux 6.9): opcode 0xe5
 *                                   (BPF_JMP | BPF_JCOND | BPF_K), off = jump target,
 *                                   taken when the program's loop budget is spent
 *
 * clang 14 has no `may_goto` mnemonic (clang 19 has, and defines __BPF_FEATURE_MAY_GOTO),
 * so can_loop writes the instruction's 8 bytes itself, as bpf_experimental.h does for
 * older compilers: opcode, registers 0, then the jump offset as the low half of a .long
 * (clang 14 encodes a .short holding a label difference wrongly) and two zero bytes, which
 * leaves imm 0. */
#ifndef BPFTIME_LOOPS_H
#define BPFTIME_LOOPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef __bpf_iter_num_defined
/* uapi linux/bpf.h of Linux 6.4+ defines it; Debian 12's headers do not. */
struct bpf_iter_num {
	__u64 __opaque[1];
} __attribute__((aligned(8)));
#endif

extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;

/* for (i = start; i < end; i++), the iterator destroyed when the loop's scope ends. */
#define bpf_for(i, start, end)                                                          \
	for (struct bpf_iter_num ___it __attribute__((aligned(8),                      \
						       cleanup(bpf_iter_num_destroy))), \
	     *___p __attribute__((unused)) =                                            \
		     (bpf_iter_num_new(&___it, (start), (end)), (void *)0);             \
	     ({                                                                         \
		     int *___t = bpf_iter_num_next(&___it);                             \
		     (___t && ((i) = *___t, 1));                                        \
	     });)

#ifdef __BPF_FEATURE_MAY_GOTO
#define can_loop                                          \
	({                                                \
		__label__ l_out, l_in;                    \
		int ___ok = 1;                            \
		asm volatile goto("may_goto %l[l_out]" :::: l_out); \
		goto l_in;                                \
	l_out:                                            \
		___ok = 0;                                \
	l_in:;                                            \
		___ok;                                    \
	})
#else
#define can_loop                                                              \
	({                                                                    \
		__label__ l_out, l_in;                                        \
		int ___ok = 1;                                                \
		asm volatile goto("1: .byte 0xe5; .byte 0;"                   \
				  ".long ((%l[l_out] - 1b - 8) / 8) & 0xffff;" \
				  ".short 0" :::: l_out);                     \
		goto l_in;                                                    \
	l_out:                                                                \
		___ok = 0;                                                    \
	l_in:;                                                                \
		___ok;                                                        \
	})
#endif

#endif
