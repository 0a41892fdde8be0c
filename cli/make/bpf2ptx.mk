# SPDX-License-Identifier: MIT OR Apache-2.0
#
# bpf2ptx.mk: pattern rules for probes and instrumented CUDA objects. In a Makefile:
#
#   BPF2PTX ?= /path/to/bpf2ptx          # default: bpf2ptx on PATH
#   include /path/to/bpf2ptx/cli/make/bpf2ptx.mk
#   BPF2PTX_PROBE := probe.bpf.o         # the probe %.probed.ptx and %.probed.o take
#
# Rules (each writes its target atomically; make deletes nothing it should keep):
#
#   %.bpf.o       from %.bpf.c   bpf2ptx build: clang with libbpf's flags, then the
#                                verifier; %.bpf.o.d lists the headers (included below)
#   %.bpf.ptx     from %.bpf.c   the probe as a PTX module (bpf2ptx FILE -o, --target
#                                $(BPF2PTX_TARGET)), e.g. for `inject --extern` + nvlink
#   %.probed.ptx  from %.ptx     application PTX (nvcc -ptx) with the probe injected
#   %.probed.o    from %.cu      nvcc -c with the probe in the object's kernels
#                                (cli/cmake/bpf2ptx-embed); link it instead of %.o
#
# Variables: BPF2PTX_BUILD_FLAGS (-I/-D for the probes), BPF2PTX_INJECT_FLAGS (e.g.
# --granularity warp), BPF2PTX_TARGET (sm_70), NVCC, NVCCFLAGS (need PTX in the objects
# for every architecture: -arch=sm_90 or -arch=sm_90a, not code=sm_90 alone; several
# -gencode are instrumented one architecture at a time).
#
# The recipes are also variables, for rules of your own (objects in a build folder):
#
#   $(B)/probe.bpf.o: probe.bpf.c ; $(bpf2ptx_build)
#   $(B)/%.probed.o: %.cu $(BPF2PTX_PROBE) ; $(bpf2ptx_nvcc) $(NVCCFLAGS) -c $< -o $@

BPF2PTX ?= bpf2ptx
BPF2PTX_MK_DIR := $(dir $(lastword $(MAKEFILE_LIST)))
BPF2PTX_EMBED ?= $(abspath $(BPF2PTX_MK_DIR)../cmake/bpf2ptx-embed)
BPF2PTX_BUILD_FLAGS ?=
BPF2PTX_INJECT_FLAGS ?=
BPF2PTX_TARGET ?= sm_70
NVCC ?= nvcc

# SOURCE.bpf.c -> verified object, with its header list in $@.d
bpf2ptx_build = $(BPF2PTX) build $< -o $@ --depfile $@.d $(BPF2PTX_BUILD_FLAGS)
# nvcc that puts $(BPF2PTX_PROBE) into the kernels of the object it compiles
bpf2ptx_nvcc = $(BPF2PTX_EMBED) --bpf2ptx $(BPF2PTX) --probe $(BPF2PTX_PROBE) \
	$(foreach f,$(BPF2PTX_INJECT_FLAGS),--inject-arg $(f)) -- $(NVCC)

%.bpf.o: %.bpf.c
	$(bpf2ptx_build)

%.bpf.ptx: %.bpf.c
	$(BPF2PTX) $< -o $@ --target $(BPF2PTX_TARGET) $(BPF2PTX_BUILD_FLAGS)

%.probed.ptx: %.ptx $(BPF2PTX_PROBE)
	$(BPF2PTX) inject $(BPF2PTX_PROBE) --into $< -o $@ $(BPF2PTX_INJECT_FLAGS)

%.probed.o: %.cu $(BPF2PTX_PROBE)
	$(bpf2ptx_nvcc) $(NVCCFLAGS) -c $< -o $@

.PRECIOUS: %.bpf.o %.probed.ptx

# The header lists of probes built here. Their rules come before the including Makefile's
# own, so the default goal is kept as it was (else the first probe would become it).
bpf2ptx_default_goal := $(.DEFAULT_GOAL)
-include $(wildcard *.bpf.o.d)
.DEFAULT_GOAL := $(bpf2ptx_default_goal)
