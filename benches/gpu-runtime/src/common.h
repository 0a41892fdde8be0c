/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shared includes of the runtime-operation probes (benches/gpu-runtime). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "bpf2ptx_helpers.h"
