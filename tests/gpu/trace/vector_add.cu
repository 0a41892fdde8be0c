// SPDX-License-Identifier: MIT OR Apache-2.0
// An unmodified CUDA application for `bpf2ptx trace`'s GPU checks: bpftime's vector add
// (`vectorAdd(const float *, const float *, float *)`, the kernel the probes of
// tests/probes/bpftime attach to) launched LAUNCHES times on N elements through the
// runtime API, its output checked on the host. Prints one line: the launches, the
// elements and the number of wrong elements (0 when correct). Built by nvcc as users
// build: static cudart by default, `-cudart shared` for the other case.
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void vectorAdd(const float *a, const float *b, float *c)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	c[i] = a[i] + b[i];
}

int main(int argc, char **argv)
{
	int launches = argc > 1 ? atoi(argv[1]) : 3;
	const int block = 256, blocks = 4096, n = block * blocks;
	std::vector<float> a(n), b(n), c(n);
	for (int i = 0; i < n; i++) {
		a[i] = float(i % 1000) * 0.5f;
		b[i] = float(i % 77);
	}
	float *da, *db, *dc;
	cudaMalloc(&da, n * sizeof(float));
	cudaMalloc(&db, n * sizeof(float));
	cudaMalloc(&dc, n * sizeof(float));
	cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice);
	cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice);
	for (int r = 0; r < launches; r++)
		vectorAdd<<<blocks, block>>>(da, db, dc);
	cudaError_t err = cudaDeviceSynchronize();
	cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost);
	int wrong = 0;
	for (int i = 0; i < n; i++)
		wrong += c[i] != a[i] + b[i];
	printf("launches %d elements %d wrong %d (%s)\n", launches, n, wrong, cudaGetErrorString(err));
	// For tests/gpu/trace_apps.py's model: every launch's shape.
	fprintf(stderr, "model vectorAdd launches %d grid %d block %d\n", launches, blocks, block);
	return wrong != 0 || err != cudaSuccess;
}
