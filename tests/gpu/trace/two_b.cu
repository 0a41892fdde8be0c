// SPDX-License-Identifier: MIT OR Apache-2.0
// The second file of the two-file application (two_a.cu).
__global__ void addone(int *x) { x[blockIdx.x * blockDim.x + threadIdx.x] += 1; }

void launch_addone(int *x, int blocks, int block, int times)
{
	for (int t = 0; t < times; t++)
		addone<<<blocks, block>>>(x);
}
