// SPDX-License-Identifier: MIT OR Apache-2.0
/* Churn per warp: 2^15 warps of vecadd 2^20 into a hash of 65536 entries (churn.h). */
#define GRAN ".warp"
#define SHIFT 5
#define MAX_ENTRIES 65536
#include "churn.h"
