# Program sections without function symbols, as older clang and hand-written assembly
# leave them: PREVAIL and iproute2 read each such executable section as one program
# named after its section. Assembled with llvm-mc (no .type @function anywhere), so the
# symbol table holds only section symbols and the legacy map.

	.section	maps,"aw",@progbits
	.globl	counters
counters:
	.long	2	# type: array
	.long	4	# key_size
	.long	8	# value_size
	.long	4	# max_entries
	.long	0	# map_flags

# A GPU probe with a bpf-to-bpf call inside its own section: the call target becomes a
# subprogram of the section.
	.section	gpu/entry/vecadd,"ax",@progbits
	r1 = 0
	*(u32 *)(r10 - 4) = r1
	r2 = r10
	r2 += -4
	r1 = counters ll
	call 1
	if r0 == 0 goto +2
	r1 = 1
	lock *(u64 *)(r0 + 0) += r1
	r1 = 5
	call .Ldouble
	exit
.Ldouble:
	r0 = r1
	r0 += r1
	exit

# A second GPU section: straight-line code.
	.section	kprobe/matmul,"ax",@progbits
	r0 = 7
	r0 += 1
	exit

# A tc section: a host-side program (compile and verify skip it; dump shows it).
	.section	classifier,"ax",@progbits
	r0 = 0
	exit

	.section	license,"aw",@progbits
	.asciz	"GPL"
