// SPDX-License-Identifier: MIT OR Apache-2.0
/* insert.bpf.c with scrambled keys (MIX_KEY of the thread id): homes collide as random keys
 * do, where plain thread ids never collide under FNV-1a. */
#include "common.h"
#define KEY_OF(id) MIX_KEY(id)
#include "insert.bpf.c"
