#include "compat.h"
#define TILE 16
// Tiled matrix multiply: shared-memory tiles, barriers, a loop.
extern "C" __global__ void matmul(const float *a, const float *b, float *c, int n) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE];
    int row = BID_Y * TILE + TID_Y;
    int col = BID_X * TILE + TID_X;
    float acc = 0.0f;
    for (int t = 0; t < n / TILE; ++t) {
        as[TID_Y][TID_X] = a[row * n + t * TILE + TID_X];
        bs[TID_Y][TID_X] = b[(t * TILE + TID_Y) * n + col];
        SYNC();
        for (int k = 0; k < TILE; ++k)
            acc += as[TID_Y][k] * bs[k][TID_X];
        SYNC();
    }
    c[row * n + col] = acc;
}
