// SPDX-License-Identifier: MIT OR Apache-2.0
// An unmodified CUDA application on two GPUs, for `bpf2ptx trace`'s multi-GPU check
// (issue 20): bpftime's vector add (`vectorAdd`, which tests/gpu/trace_apps.py's probes
// count) on device 0 and device 1 (cudaSetDevice, one stream each), device d launching
// LAUNCHES + d times, the launches of both devices interleaved. Each device's output is
// checked on the host. Prints one line; exits 77 (the check is skipped) with fewer than
// two GPUs.
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
	int count = 0;
	cudaGetDeviceCount(&count);
	if (count < 2) {
		printf("two devices needed, %d found\n", count);
		return 77;
	}
	int launches = argc > 1 ? atoi(argv[1]) : 3;
	const int block = 256, blocks = 1024, n = block * blocks;
	std::vector<float> a(n), b(n), c(n);
	for (int i = 0; i < n; i++) {
		a[i] = float(i % 1000) * 0.5f;
		b[i] = float(i % 77);
	}
	float *da[2], *db[2], *dc[2];
	cudaStream_t s[2];
	for (int d = 0; d < 2; d++) {
		cudaSetDevice(d);
		cudaStreamCreate(&s[d]);
		cudaMalloc(&da[d], n * sizeof(float));
		cudaMalloc(&db[d], n * sizeof(float));
		cudaMalloc(&dc[d], n * sizeof(float));
		cudaMemcpy(da[d], a.data(), n * sizeof(float), cudaMemcpyHostToDevice);
		cudaMemcpy(db[d], b.data(), n * sizeof(float), cudaMemcpyHostToDevice);
	}
	for (int r = 0; r < launches + 1; r++)
		for (int d = 0; d < 2; d++)
			if (r < launches + d) {
				cudaSetDevice(d);
				vectorAdd<<<blocks, block, 0, s[d]>>>(da[d], db[d], dc[d]);
			}
	int wrong = 0;
	cudaError_t err = cudaSuccess;
	for (int d = 0; d < 2; d++) {
		cudaSetDevice(d);
		cudaError_t e = cudaStreamSynchronize(s[d]);
		if (e != cudaSuccess)
			err = e;
		cudaMemcpy(c.data(), dc[d], n * sizeof(float), cudaMemcpyDeviceToHost);
		for (int i = 0; i < n; i++)
			wrong += c[i] != a[i] + b[i];
	}
	printf("devices 2 launches %d %d elements %d wrong %d (%s)\n", launches, launches + 1, n,
	       wrong, cudaGetErrorString(err));
	// For tests/gpu/trace_apps.py's model: every device's launches.
	for (int d = 0; d < 2; d++)
		fprintf(stderr, "model vectorAdd launches %d grid %d block %d device %d\n", launches + d,
			blocks, block, d);
	return wrong != 0 || err != cudaSuccess;
}
