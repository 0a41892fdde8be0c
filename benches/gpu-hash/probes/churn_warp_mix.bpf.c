// SPDX-License-Identifier: MIT OR Apache-2.0
/* Churn per warp: 2^15 warps of vecadd 2^20 into a hash of 65536 entries, keys scrambled (MIX_KEY) (churn.h). */
#define GRAN ".warp"
#define SHIFT 5
#define MAX_ENTRIES 65536
#define KEY_OF(id) MIX_KEY(id)
#include "churn.h"
