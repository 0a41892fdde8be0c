// SPDX-License-Identifier: MIT OR Apache-2.0
/* big_globals: big.bpf.c with global data instead of a map (see there). */
#define BIG_GLOBALS
#include "big.bpf.c"
