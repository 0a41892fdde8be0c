// SPDX-License-Identifier: MIT OR Apache-2.0
// The example's two kernels, each in its own .cu (so each has its own module, and its
// own instance of the probe's maps once instrumented), behind plain host functions.
#pragma once

// c[i] = a[i] + b[i] for i < n; grid = ceil(n / block) blocks.
void launch_vecadd(const float *a, const float *b, float *c, int n, int block);
// y[i] = s * x[i] for i < n.
void launch_scale(const float *x, float *y, float s, int n, int block);

// The kernels themselves, for probe_maps.h (cudaGetFuncBySymbol).
const void *vecadd_symbol();
const void *scale_symbol();
