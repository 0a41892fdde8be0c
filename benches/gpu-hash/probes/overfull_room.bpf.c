// SPDX-License-Identifier: MIT OR Apache-2.0
/* Over-full's reference: the same 2^20 keys into a hash with room for all (overfull.h). */
#define MAP_TYPE BPF_MAP_TYPE_HASH
#define MAX_ENTRIES (1 << 20)
#include "overfull.h"
