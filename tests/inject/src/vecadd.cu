#include "compat.h"
// c[i] = a[i] + b[i]: two global loads, one global store, one predicated exit.
extern "C" __global__ void vecadd(const float *a, const float *b, float *c, int n) {
    int i = BID_X * BDIM_X + TID_X;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
