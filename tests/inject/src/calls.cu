#include "compat.h"
// A non-inlined device function (call sequence with .param blocks), a local array
// (local memory), a branchy loop, inline asm, a global variable, and atomics on ints.
__device__ int hits;
__device__ __constant__ float weights[4] = {0.5f, 0.25f, 0.125f, 0.125f};

__device__ __noinline__ float mix(float x, int k) {
    float tmp[8];
    for (int j = 0; j < 8; ++j)
        tmp[j] = x * (j + k);
    return tmp[k & 7] + weights[k & 3];
}

__device__ __forceinline__ unsigned lane_id() {
    unsigned r;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));
    return r;
}

extern "C" __global__ void calls(float *data, int n) {
    int i = BID_X * BDIM_X + TID_X;
    if (i >= n)
        return;
    float x = data[i];
    if (x > 0.0f)
        x = mix(x, i);
    else
        atomicAdd(&hits, 1);
    if (lane_id() == 0)
        atomicMax(&hits, i);
    data[i] = x;
}
