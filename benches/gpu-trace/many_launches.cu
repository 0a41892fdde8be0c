// SPDX-License-Identifier: MIT OR Apache-2.0
// An unmodified CUDA application for `bpf2ptx trace`'s per-launch host overhead
// (issue 16, "Overhead"): LAUNCHES launches of a one-warp kernel, issued in bursts of
// BURST launches with a synchronize after each burst. A burst is shorter than the
// driver's launch queue, so the time to issue it is the host's cost of the launch calls
// (the interposer's included) and not the GPU's. Prints on stdout the launches and the
// kernel's own count of them (the output `bpf2ptx trace` must leave unchanged) and on
// stderr the timings:
//   issue_ns_per_launch  median over bursts of (time to issue the burst) / BURST
//   wall_ns_per_launch   (time of all bursts, synchronizes included) / LAUNCHES
// Built by nvcc as users build (static cudart).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void tiny(unsigned long long *count)
{
	if (threadIdx.x == 0)
		atomicAdd(count, 1ull);
}

static double now_ns()
{
	return std::chrono::duration<double, std::nano>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

int main(int argc, char **argv)
{
	int launches = argc > 1 ? atoi(argv[1]) : 100000;
	int burst = argc > 2 ? atoi(argv[2]) : 500;
	if (launches <= 0 || burst <= 0 || launches % burst != 0) {
		fprintf(stderr, "usage: many_launches [LAUNCHES] [BURST dividing LAUNCHES]\n");
		return 2;
	}
	unsigned long long *d;
	cudaMalloc(&d, sizeof *d);
	cudaMemset(d, 0, sizeof *d);
	// Warm-up: the first launch loads (and under trace instruments) the module.
	for (int i = 0; i < 1000; i++)
		tiny<<<1, 32>>>(d);
	cudaDeviceSynchronize();
	std::vector<double> issue;
	double t0 = now_ns();
	for (int b = 0; b < launches / burst; b++) {
		double s = now_ns();
		for (int i = 0; i < burst; i++)
			tiny<<<1, 32>>>(d);
		issue.push_back((now_ns() - s) / burst);
		cudaDeviceSynchronize();
	}
	double wall = (now_ns() - t0) / launches;
	cudaError_t err = cudaDeviceSynchronize();
	unsigned long long h = 0;
	cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
	std::sort(issue.begin(), issue.end());
	printf("launches %d counted %llu (%s)\n", launches + 1000, h, cudaGetErrorString(err));
	fprintf(stderr, "issue_ns_per_launch %.1f wall_ns_per_launch %.1f\n", issue[issue.size() / 2], wall);
	fprintf(stderr, "model tiny launches %d grid 1 block 32\n", launches + 1000);
	return err != cudaSuccess || h != (unsigned long long)(launches + 1000);
}
