// SPDX-License-Identifier: MIT OR Apache-2.0
// An application of two .cu files (two_a.cu, two_b.cu), each its own module: `fill` here,
// `addone` in two_b.cu, launched from here. For tests/gpu/trace_apps.py.
#include <cstdio>
#include <vector>

__global__ void fill(int *x) { x[blockIdx.x * blockDim.x + threadIdx.x] = 7; }
void launch_addone(int *x, int blocks, int block, int times);

int main()
{
	const int block = 64, blocks = 1000, n = block * blocks;
	int *d;
	cudaMalloc(&d, n * sizeof(int));
	fill<<<blocks, block>>>(d);
	launch_addone(d, blocks, block, 2);
	std::vector<int> h(n);
	cudaError_t err = cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost);
	int wrong = 0;
	for (int v : h)
		wrong += v != 9;
	printf("two files elements %d wrong %d (%s)\n", n, wrong, cudaGetErrorString(err));
	fprintf(stderr, "model fill launches 1 grid %d block %d\n", blocks, block);
	fprintf(stderr, "model addone launches 2 grid %d block %d\n", blocks, block);
	return wrong != 0 || err != cudaSuccess;
}
