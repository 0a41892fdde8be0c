#include "compat.h"
// Block sum: warp shuffles, then one atomic per warp.
extern "C" __global__ void reduce(const float *in, float *out, int n) {
    int i = BID_X * BDIM_X + TID_X;
    float v = i < n ? in[i] : 0.0f;
    for (int d = 16; d > 0; d /= 2)
        v += SHFL_DOWN(v, d);
    if ((TID_X & 31) == 0)
        ATOMIC_ADD(out, v);
}
