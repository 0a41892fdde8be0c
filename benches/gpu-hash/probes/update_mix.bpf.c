// SPDX-License-Identifier: MIT OR Apache-2.0
/* update.bpf.c with scrambled keys (MIX_KEY of the thread id): homes collide as random keys
 * do, where plain thread ids never collide under FNV-1a. */
#include "common.h"
#define KEY_OF(id) MIX_KEY(id)
#include "update.bpf.c"
