// SPDX-License-Identifier: MIT OR Apache-2.0
/* Churn per thread: 2^20 threads of vecadd 2^20 into a hash of 2^21 entries, keys scrambled (MIX_KEY) (churn.h). */
#define GRAN ""
#define SHIFT 0
#define MAX_ENTRIES (1 << 21)
#define KEY_OF(id) MIX_KEY(id)
#include "churn.h"
