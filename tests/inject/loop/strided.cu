// SPDX-License-Identifier: MIT OR Apache-2.0
// A grid-stride vector add: each thread adds every (grid x block)-th element, so a memory
// site runs several times per thread (the loop fusion accumulates in, tests/tests/fuse.rs).
// Rebuild: nvcc -ptx -arch=sm_90 -O3 strided.cu -o strided.ptx (CUDA 13.0)
extern "C" __global__ void strided_add(const float *a, const float *b, float *c, int n)
{
	int step = gridDim.x * blockDim.x;
#pragma unroll 1
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
		c[i] = a[i] + b[i];
}
