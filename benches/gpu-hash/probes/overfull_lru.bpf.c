// SPDX-License-Identifier: MIT OR Apache-2.0
/* Over-full LRU: 2^20 distinct keys into an LRU hash (9) of 4096 entries (overfull.h). */
#define MAP_TYPE BPF_MAP_TYPE_LRU_HASH
#define MAX_ENTRIES 4096
#include "overfull.h"
