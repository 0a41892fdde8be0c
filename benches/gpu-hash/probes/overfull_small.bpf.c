// SPDX-License-Identifier: MIT OR Apache-2.0
/* Over-full: 2^20 distinct keys into a hash of 4096 entries (overfull.h). */
#define MAP_TYPE BPF_MAP_TYPE_HASH
#define MAX_ENTRIES 4096
#include "overfull.h"
